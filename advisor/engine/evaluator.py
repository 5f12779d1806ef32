"""Evaluation of checked rule expressions (advisor/core/expr.py parses and checks them at load).

Values that reach an expression are plain data (None, bool, int, float, str, lists, tuples and dicts of
those) or fact namespaces: `Evaluator.plain` converts facts on the way in (a Location becomes a mapping
of file, line, col and key; a path its text; a dataclass the mapping of its fields) and refuses anything
else. Work is bounded while evaluating (string, list and integer sizes, comprehension lengths, an operation
budget, a characters-and-elements allocation budget and a time backstop per budget), so no expression can
exhaust memory or hang.
"""

from __future__ import annotations

import ast
import operator
import time
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import PurePath
from typing import Any

from advisor.core import records
from advisor.core.document import Location
from advisor.core.expr import LIMITS, BudgetError, EvalError, ExprError, Expression, Limits
from advisor.core.provenance import Namespace, Value
from advisor.core.rule_helpers import HELPER_COSTS

_SCALARS: frozenset[type] = frozenset({type(None), bool, int, float, str})
_BINDABLE: frozenset[type] = _SCALARS | {list, tuple, dict}
_CONTAINERS: frozenset[type] = frozenset({list, tuple, dict})
_DEEP: frozenset[type] = frozenset({str, list, tuple, dict})  # what a comparison or a hash walks
_CACHED_WEIGHT = 16  # containers at least this long keep their weight for the rest of the budget
_EXPENSIVE = 1024  # a charge this large reads the clock
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Sub: operator.sub,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_BITWISE: dict[type, Callable[[Any, Any], Any]] = {
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}


def _kind(value: Any) -> str:
    return "a fact namespace" if isinstance(value, Namespace) else type(value).__name__


def _is_number(value: Any) -> bool:
    return type(value) in (int, float, bool)


class Evaluator:
    """Evaluates checked expressions over one set of names (a run's or a document's fact namespaces).

    `reset()` starts a new budget (the engine calls it once per rule); `bind` sets a local such as
    `item`. Converted facts are memoised, so a fact list read in every iteration is converted once,
    and `raw_of` maps a converted mapping back to the fact it came from (for its location)."""

    def __init__(
        self, names: Mapping[str, Any], helpers: Mapping[str, Callable[..., Any]], limits: Limits = LIMITS
    ) -> None:
        self._names = names
        self._helpers = helpers
        self._limits = limits
        self._locals: dict[str, Any] = {}
        self._lazy: dict[str, Expression] = {}  # `let` names not evaluated yet
        self._converted: dict[int, tuple[Any, Any]] = {}  # id(fact value) -> (fact value, plain value)
        self._sources: dict[int, tuple[Any, Any]] = {}  # id(plain mapping) -> (plain mapping, fact value)
        self._weights: dict[int, tuple[Any, int]] = {}  # id(container) -> (container, weight), per budget
        self._ops = 0
        self._alloc = 0
        self._work = 0
        self._deadline = 0.0
        self.reset()

    # -- the engine's side

    def reset(self) -> None:
        self._ops = 0
        self._alloc = 0
        self._work = 0
        self._weights.clear()
        self._deadline = time.monotonic() + self._limits.seconds

    def bind(self, name: str, value: Any) -> None:
        """Set a local (e.g. `item`) to a value that evaluate() or plain() returned, so already plain."""
        if type(value) not in _BINDABLE and not isinstance(value, Namespace):
            raise EvalError(f"a value of type {type(value).__name__} is not plain data")
        self._locals[name] = value

    def unbind(self, name: str) -> None:
        self._locals.pop(name, None)
        self._lazy.pop(name, None)

    def bind_lazy(self, name: str, expr: Expression) -> None:
        """Set a local to an expression evaluated when first read (a rule's `let`), then kept."""
        self._locals.pop(name, None)
        self._lazy[name] = expr

    def evaluate(self, expr: Expression) -> Any:
        try:
            return self._eval(expr.tree)
        except EvalError:
            raise
        except ExprError as exc:  # a deferred expression refused on first use
            raise EvalError(f"expression refused: {exc}") from None
        except RecursionError:
            raise EvalError("expression nested too deeply to evaluate") from None
        except MemoryError:
            raise BudgetError("expression ran out of memory") from None

    def raw_of(self, value: Any) -> Any:
        """The fact a converted mapping came from, or None for one an expression built."""
        hit = self._sources.get(id(value))
        return hit[1] if hit is not None and hit[0] is value else None

    def plain(self, value: Any) -> Any:
        """A fact value as plain data, or EvalError for a value that has no plain form.

        Memoised per value read (a fact list read in every iteration is converted once)."""
        if type(value) in _SCALARS or isinstance(value, Namespace):
            return value
        hit = self._converted.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        out = self._convert(value, 0)
        self._converted[id(value)] = (value, out)
        return out

    # -- conversion (the hot part of evaluating a large fact list: scalars skip the call)

    def _convert(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind in _SCALARS or isinstance(value, Namespace):
            return value
        if depth > self._limits.depth:
            raise EvalError(f"a fact value is nested more than {self._limits.depth} levels deep")
        scalars = _SCALARS
        out: Any
        if kind is dict:
            out = {}
            for k, v in value.items():
                if type(k) not in scalars:
                    k = self._convert_key(k)
                out[k] = v if type(v) in scalars else self._convert(v, depth + 1)
            self._sources[id(out)] = (out, value)
            return out
        if kind is list or kind is tuple:
            out = [v if type(v) in scalars else self._convert(v, depth + 1) for v in value]
            return out if kind is list else tuple(out)
        if kind is Location:
            return {"file": str(value.file), "line": value.line, "col": value.col, "key": value.key}
        if isinstance(value, Value):
            return self._convert(value.value, depth + 1) if value.known else None
        if isinstance(value, Enum):
            return self._convert(value.value, depth + 1)
        if isinstance(value, bool | int | float | str):  # subclasses of the scalars
            return kind.__mro__[-2](value)
        if isinstance(value, dict | list | tuple):  # subclasses of the containers
            return self._convert(kind.__mro__[-2](value), depth)
        if isinstance(value, set | frozenset):
            items = [self._convert(v, depth + 1) for v in value]
            try:
                return sorted(items)
            except TypeError:
                return sorted(items, key=repr)
        if isinstance(value, Location):
            return self._convert(Location(value.file, value.line, value.col, value.key), depth)
        if isinstance(value, PurePath):
            return str(value)
        if records.is_record(value) and not isinstance(value, type):
            out = {
                f.name: self._convert(getattr(value, f.name), depth + 1)
                for f in records.fields(value)
                if not f.name.startswith("_")
            }
            self._sources[id(out)] = (out, value)
            return out
        raise EvalError(f"a fact of type {kind.__name__} is not plain data")

    def _convert_key(self, key: Any) -> Any:
        converted = self._convert(key, 0)
        if converted is None or type(converted) in (str, int, float, bool, tuple):
            return converted
        return str(key)

    # -- the budget

    def _clock(self) -> None:
        if time.monotonic() > self._deadline:
            raise BudgetError(f"expression took more than {self._limits.seconds:g} s")

    def _spend(self, n: int) -> None:
        """Charge what a step produces, before it is built where its size is known in advance."""
        self._alloc += n
        if self._alloc > self._limits.allocation:
            raise BudgetError(
                f"expression produced more than {self._limits.allocation:,} characters and elements"
            )
        if n >= _EXPENSIVE:
            self._clock()

    def _charge(self, n: int) -> None:
        """Charge what a step walks (compares, hashes, searches, sorts; words of long arithmetic), before it
        runs: a step this large also reads the clock."""
        self._work += n
        if self._work > self._limits.work:
            raise BudgetError(
                f"expression compared, hashed, sorted or computed on more than {self._limits.work:,} "
                "elements, characters and integer words"
            )
        if n >= _EXPENSIVE:
            self._clock()

    def weight(self, value: Any) -> int:
        """A value's deep size: one per scalar and element, plus a string's characters and an integer's
        64-bit words. What comparing, hashing or showing it may touch: `[[0] * 99999] * 99999` is 10**5
        elements to build and about 10**10 to compare."""
        kind = type(value)
        if kind is str:
            return 1 + len(value)
        if kind is int:
            return 1 + (value.bit_length() >> 6)
        if kind not in _CONTAINERS:
            return 1
        hit = self._weights.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        total = 1
        for v in (part for pair in value.items() for part in pair) if kind is dict else value:
            t = type(v)
            if t is str:
                total += 1 + len(v)
            elif t is int:
                total += 1 + (v.bit_length() >> 6)
            elif t in _CONTAINERS:
                total += self.weight(v)
            else:
                total += 1
        if len(value) >= _CACHED_WEIGHT:
            self._weights[id(value)] = (value, total)
        return total

    def _hashing(self, key: Any) -> None:
        """Charge looking a key up in a mapping: a tuple is hashed anew each time, a long string compared."""
        kind = type(key)
        if kind is tuple or (kind is str and len(key) > 64):
            self._charge(self.weight(key))

    def _produce(self, kind: type, size: int) -> None:
        """Refuse a string or list of `size` before it is built, and charge it."""
        if kind is str and size > self._limits.string_chars:
            raise BudgetError(f"a string of more than {self._limits.string_chars:,} characters")
        if kind is not str and size > self._limits.items:
            raise BudgetError(f"a list of more than {self._limits.items:,} elements")
        self._spend(size)

    def _int_bits(self, bits: int) -> None:
        """Refuse an integer of `bits` before it is computed, and charge its 64-bit words."""
        if bits > self._limits.int_bits:
            raise BudgetError(f"an integer of more than {self._limits.int_bits:,} bits")
        if bits > 64:
            self._spend(bits >> 6)

    def _long(self, a_bits: int, b_bits: int) -> None:
        """Charge a long multiplication or division: about one step per pair of 64-bit words (a 63,000-bit
        product is a millisecond, a division four; in a loop they were seconds between clock reads)."""
        work = (a_bits >> 6) * (b_bits >> 6)
        if work:
            self._charge(work)

    def _sized(self, value: Any) -> Any:
        """Count a produced value against the budget and refuse one over the size limits."""
        kind = type(value)
        if kind is str:
            if len(value) > self._limits.string_chars:
                raise BudgetError(f"a string longer than {self._limits.string_chars:,} characters")
            self._spend(len(value))
        elif kind is int:
            bits = value.bit_length()
            if bits > self._limits.int_bits:
                raise BudgetError(f"an integer of more than {self._limits.int_bits:,} bits")
            if bits > 64:
                self._spend(bits >> 6)
        elif kind is list or kind is tuple or kind is dict:
            if len(value) > self._limits.items:
                raise BudgetError(f"a list or mapping of more than {self._limits.items:,} elements")
            self._spend(len(value))
        elif kind is float or kind is bool or value is None or isinstance(value, Namespace):
            pass
        else:
            raise EvalError(f"a value of type {kind.__name__} is not plain data")
        return value

    # -- nodes

    def _eval(self, node: ast.expr) -> Any:
        self._ops += 1
        if self._ops > self._limits.operations:
            raise BudgetError(f"expression took more than {self._limits.operations:,} steps")
        if not self._ops & 1023:  # a cheap step; an expensive one reads the clock when it is charged
            self._clock()
        handler = _HANDLERS.get(type(node))
        if handler is None:  # parse() refused it already; a tree built some other way
            raise EvalError(f"{type(node).__name__} is not allowed in a rule expression")
        return handler(self, node)

    def _constant(self, node: ast.Constant) -> Any:
        return node.value

    def _name(self, node: ast.Name) -> Any:
        name = node.id
        if name in self._locals:
            return self._locals[name]
        lazy = self._lazy.pop(name, None)
        if lazy is not None:  # popped first: an expression reading its own name finds no such name
            self._locals[name] = value = self._eval(lazy.tree)
            return value
        if name in self._names:
            return self.plain(self._names[name])
        if name in self._helpers:
            raise EvalError(f"{name} is a helper: call it as {name}(...)")
        raise EvalError(f"unknown name {name!r}")

    def _member(self, base: Any, key: Any) -> Any:
        if isinstance(base, Namespace):
            if not isinstance(key, str) or key.startswith("_"):
                raise EvalError(f"a fact namespace has no entry {key!r}")
            return self.plain(base.read(key))
        if type(base) is dict:
            self._hashing(key)
            try:
                return base[key]
            except KeyError:
                raise EvalError(f"no key {key!r} in the mapping") from None
            except TypeError:
                raise EvalError(f"a mapping key cannot be {_kind(key)}") from None
        raise EvalError(f"{_kind(base)} has no entry {key!r}: only fact namespaces and mappings have them")

    def _attribute(self, node: ast.Attribute) -> Any:
        return self._member(self._eval(node.value), node.attr)

    def _subscript(self, node: ast.Subscript) -> Any:
        base = self._eval(node.value)
        if isinstance(node.slice, ast.Slice):
            if type(base) not in (list, tuple, str):
                raise EvalError(f"{_kind(base)} cannot be sliced")
            parts = [
                None if p is None else self._eval(p)
                for p in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            if any(p is not None and type(p) not in (int, bool) for p in parts):
                raise EvalError("slice bounds must be integers")
            try:
                self._produce(type(base), len(range(len(base))[slice(*parts)]))
                return base[slice(*parts)]
            except ValueError as exc:  # a zero step
                raise EvalError(str(exc)) from None
        key = self._eval(node.slice)
        if isinstance(base, Namespace) or type(base) is dict:
            return self._member(base, key)
        if type(base) in (list, tuple, str):
            if type(key) not in (int, bool):
                raise EvalError(f"an index must be an integer, not {_kind(key)}")
            try:
                return base[key]
            except IndexError:
                raise EvalError(f"index {key} is out of range (length {len(base)})") from None
        raise EvalError(f"{_kind(base)} cannot be indexed")

    def _list(self, node: ast.List) -> Any:
        return self._sized([self._eval(e) for e in node.elts])

    def _tuple(self, node: ast.Tuple) -> Any:
        return self._sized(tuple(self._eval(e) for e in node.elts))

    def _dict(self, node: ast.Dict) -> Any:
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = self._eval(k)  # type: ignore[arg-type]  # parse() refused `**`
            self._hashing(key)
            try:
                out[key] = self._eval(v)
            except TypeError:
                raise EvalError(f"a mapping key cannot be {_kind(key)}") from None
        return self._sized(out)

    def _unary(self, node: ast.UnaryOp) -> Any:
        value = self._eval(node.operand)
        if isinstance(node.op, ast.Not):
            return not value
        if not _is_number(value) or (isinstance(node.op, ast.Invert) and type(value) is float):
            raise EvalError(f"unary operator on {_kind(value)}")
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        return ~value

    def _boolop(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        value: Any = None
        for part in node.values:
            value = self._eval(part)
            if bool(value) != is_and:
                return value
        return value

    def _ifexp(self, node: ast.IfExp) -> Any:
        return self._eval(node.body) if self._eval(node.test) else self._eval(node.orelse)

    def _compare(self, node: ast.Compare) -> Any:
        left = self._eval(node.left)
        result: Any = True
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._eval(comparator)
            kind = type(op)
            if kind is ast.In or kind is ast.NotIn:
                result = self._contains(right, left) == (kind is ast.In)
            else:
                if (
                    kind is not ast.Is
                    and kind is not ast.IsNot
                    and (type(left) in _DEEP or type(right) in _DEEP)
                ):
                    self._charge(min(self.weight(left), self.weight(right)))
                try:
                    result = _COMPARE[kind](left, right)
                except TypeError:
                    raise EvalError(f"cannot compare {_kind(left)} with {_kind(right)}") from None
            if not result:
                return result
            left = right
        return result

    def _contains(self, container: Any, item: Any) -> bool:
        if type(container) is str:
            if type(item) is not str:
                raise EvalError(f"'in <string>' needs a string on the left, not {_kind(item)}")
            if len(container) > 64:
                self._charge(len(container) + len(item))
            return item in container
        if isinstance(container, Namespace):
            return type(item) is str and not item.startswith("_") and item in container
        if type(container) is dict:
            self._hashing(item)
        elif type(container) in (list, tuple) and container:
            # each element is compared with the item: at most the smaller of the two each time
            self._charge(min(len(container) * self.weight(item), self.weight(container)))
        if type(container) in (list, tuple, dict):
            try:
                return item in container
            except TypeError:
                raise EvalError(f"{_kind(item)} cannot be looked up in a mapping") from None
        raise EvalError(f"'in' needs a string, list, tuple, mapping or namespace, not {_kind(container)}")

    def _binop(self, node: ast.BinOp) -> Any:
        left = self._eval(node.left)
        right = self._eval(node.right)
        kind = type(node.op)
        try:
            if kind is ast.Add:
                return self._add(left, right)
            if kind is ast.Mult:
                return self._multiply(left, right)
            if kind is ast.Pow:
                return self._power(left, right)
            if kind in _ARITHMETIC:
                self._numbers(left, right, node.op)
                if kind in (ast.FloorDiv, ast.Mod) and type(left) is int and type(right) is int:
                    self._long(left.bit_length(), right.bit_length())
                return self._sized(_ARITHMETIC[kind](left, right))
            if kind in _BITWISE or kind is ast.LShift or kind is ast.RShift:
                if type(left) not in (int, bool) or type(right) not in (int, bool):
                    raise EvalError(f"bitwise operator on {_kind(left)} and {_kind(right)}")
                if kind is ast.LShift:
                    if right > self._limits.int_bits:
                        raise BudgetError(f"an integer of more than {self._limits.int_bits:,} bits")
                    self._int_bits(left.bit_length() + max(right, 0))
                    return left << right
                if kind is ast.RShift:
                    return left >> right
                return self._sized(_BITWISE[kind](left, right))
        except ZeroDivisionError:
            raise EvalError("division by zero") from None
        except OverflowError:
            raise EvalError("number too large") from None
        except ValueError as exc:  # a negative shift count
            raise EvalError(str(exc)) from None
        raise EvalError(f"{kind.__name__} is not allowed in a rule expression")

    def _numbers(self, left: Any, right: Any, op: ast.operator) -> None:
        if not (_is_number(left) and _is_number(right)):
            raise EvalError(f"{type(op).__name__} of {_kind(left)} and {_kind(right)}")

    def _add(self, left: Any, right: Any) -> Any:
        if _is_number(left) and _is_number(right):
            return self._sized(left + right)
        kind = type(left)
        if kind is type(right) and kind in (str, list, tuple):
            self._produce(kind, len(left) + len(right))
            return left + right
        raise EvalError(f"cannot add {_kind(left)} and {_kind(right)}")

    def _multiply(self, left: Any, right: Any) -> Any:
        if _is_number(left) and _is_number(right):
            if type(left) is not float and type(right) is not float:
                self._int_bits(left.bit_length() + right.bit_length())
                self._long(left.bit_length(), right.bit_length())
            return self._sized(left * right)
        seq, times = (left, right) if type(right) in (int, bool) else (right, left)
        if type(seq) in (str, list, tuple) and type(times) in (int, bool):
            self._produce(type(seq), len(seq) * max(times, 0))  # charged before it is built
            return seq * times
        raise EvalError(f"cannot multiply {_kind(left)} and {_kind(right)}")

    def _power(self, base: Any, exponent: Any) -> Any:
        if not (_is_number(base) and _is_number(exponent)):
            raise EvalError(f"power of {_kind(base)} and {_kind(exponent)}")
        ints = type(base) is not float and type(exponent) is not float
        # a lower bound of the result's bits; _sized checks the exact size of what is computed
        bits = self._limits.int_bits
        if (
            ints
            and exponent > 0
            and abs(base) > 1
            and (exponent > bits or exponent * (abs(base).bit_length() - 1) > bits)
        ):
            raise BudgetError(f"{base} ** {exponent} has more than {self._limits.int_bits:,} bits")
        if ints and exponent > 0 and abs(base) > 1:
            bits = exponent * (abs(base).bit_length() - 1)
            self._int_bits(bits)  # charged before it is computed
            self._long(bits, bits)  # its last squaring
        result = base**exponent
        if type(result) is complex:
            raise EvalError(f"{base} ** {exponent} is not a real number")
        return self._sized(result)

    def _call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]  # parse() allows helper names only
        helper = self._helpers.get(name)
        if helper is None:
            raise EvalError(f"{name}() is not a helper")
        args = [self._eval(a) for a in node.args]
        if any(isinstance(a, Namespace) for a in args):  # a namespace is read by name, not handed over
            raise EvalError(f"{name}() takes values, not a fact namespace")
        self._charge_call(name, args)
        try:
            result = helper(*args)
        except EvalError:
            raise
        except (TypeError, ValueError, ArithmeticError, LookupError) as exc:
            raise EvalError(f"{name}(): {exc}") from None
        return self._sized(result)

    def _charge_call(self, name: str, args: list[Any]) -> None:
        """What a helper walks, charged before it runs (advisor/core/rule_helpers.py HELPER_COSTS)."""
        cost = HELPER_COSTS.get(name, "deep")
        if cost == "flat" or not args:
            return
        first = args[0] if len(args) == 1 else args
        if cost == "length":
            self._charge(len(first) if type(first) in _DEEP else 1)
            return
        deep = sum(self.weight(a) for a in args)
        if cost == "sort" and type(first) in _DEEP:
            # timsort: each merge level compares every element at most once (CPython Objects/listsort.txt)
            deep *= max(len(first), 2).bit_length()
        self._charge(deep)

    # -- comprehensions

    def _iterable(self, value: Any) -> Any:
        if type(value) in (list, tuple, str, dict):
            return value
        raise EvalError(f"cannot iterate over {_kind(value)}")

    def _comprehension(self, generators: list[ast.comprehension], emit: Callable[[], None]) -> None:
        names = {n.id for g in generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        saved = {n: self._locals[n] for n in names if n in self._locals}
        counter = [0]
        try:
            self._loop(generators, 0, emit, counter)
        finally:
            for n in names:
                self._locals.pop(n, None)
            self._locals.update(saved)

    def _loop(
        self, generators: list[ast.comprehension], i: int, emit: Callable[[], None], counter: list[int]
    ) -> None:
        gen = generators[i]
        for value in self._iterable(self._eval(gen.iter)):
            counter[0] += 1
            self._ops += 1  # an iteration is a step even when its element is a bare name
            if counter[0] > self._limits.items:
                raise BudgetError(f"a comprehension of more than {self._limits.items:,} iterations")
            self._assign(gen.target, value)
            if all(self._eval(cond) for cond in gen.ifs):
                if i + 1 < len(generators):
                    self._loop(generators, i + 1, emit, counter)
                else:
                    emit()

    def _assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self._locals[target.id] = value
            return
        elts = target.elts  # type: ignore[attr-defined]  # parse() allows names and tuples of names
        if type(value) not in (list, tuple) or len(value) != len(elts):
            raise EvalError(f"cannot unpack {_kind(value)} into {len(elts)} names")
        for t, v in zip(elts, value, strict=True):
            self._assign(t, v)

    def _listcomp(self, node: ast.ListComp | ast.GeneratorExp) -> Any:
        out: list[Any] = []
        self._comprehension(node.generators, lambda: out.append(self._eval(node.elt)))
        return self._sized(out)

    def _dictcomp(self, node: ast.DictComp) -> Any:
        out: dict[Any, Any] = {}

        def emit() -> None:
            key = self._eval(node.key)
            self._hashing(key)
            try:
                out[key] = self._eval(node.value)
            except TypeError:
                raise EvalError(f"a mapping key cannot be {_kind(key)}") from None

        self._comprehension(node.generators, emit)
        return self._sized(out)


_HANDLERS: dict[type, Callable[[Evaluator, Any], Any]] = {
    ast.Constant: Evaluator._constant,
    ast.Name: Evaluator._name,
    ast.Attribute: Evaluator._attribute,
    ast.Subscript: Evaluator._subscript,
    ast.List: Evaluator._list,
    ast.Tuple: Evaluator._tuple,
    ast.Dict: Evaluator._dict,
    ast.UnaryOp: Evaluator._unary,
    ast.BoolOp: Evaluator._boolop,
    ast.IfExp: Evaluator._ifexp,
    ast.Compare: Evaluator._compare,
    ast.BinOp: Evaluator._binop,
    ast.Call: Evaluator._call,
    ast.ListComp: Evaluator._listcomp,
    ast.GeneratorExp: Evaluator._listcomp,
    ast.DictComp: Evaluator._dictcomp,
}
