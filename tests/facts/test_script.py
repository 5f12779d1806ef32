"""Tests for advisor.facts.script_ast: rank guards around side effects, device_map="auto", parse errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from advisor.facts.script_ast import MAX_SCRIPT_BYTES, ScriptFacts, SideEffect, analyse_script

SCRIPTS = Path(__file__).parent / "scripts"


def facts(src: str) -> ScriptFacts:
    result = analyse_script(textwrap.dedent(src))
    assert result.syntax_error is None, result.syntax_error
    return result


def effects(src: str, kind: str | None = None) -> list[SideEffect]:
    return [e for e in facts(src).side_effects if kind is None or e.kind == kind]


def only(src: str, kind: str | None = None) -> SideEffect:
    found = effects(src, kind)
    assert len(found) == 1, found
    return found[0]


# --- the seed's example and the plain cases ---------------------------------------------------


def test_unguarded_save_pretrained_in_accelerate_script():
    src = """\
        from accelerate import Accelerator
        from transformers import AutoModelForCausalLM, AutoTokenizer

        accelerator = Accelerator()
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = accelerator.prepare(model)
        unwrapped = accelerator.unwrap_model(model)
        unwrapped.save_pretrained("out")
        tokenizer.save_pretrained("out")
    """
    found = effects(src)
    assert [(e.kind, e.call, e.line, e.col, e.guarded, e.function) for e in found] == [
        ("save_pretrained", "unwrapped.save_pretrained", 9, 1, False, None),
        ("save_pretrained", "tokenizer.save_pretrained", 10, 1, False, None),
    ]
    assert facts(src).unguarded == tuple(found)


def test_guarded_by_accelerator_is_main_process():
    src = """\
        from accelerate import Accelerator
        from datasets import load_dataset

        accelerator = Accelerator()
        dataset = load_dataset("imdb")
        if accelerator.is_main_process:
            dataset.save_to_disk("data/imdb")
            dataset.push_to_hub("me/imdb")
        else:
            dataset.save_to_disk("data/other")
    """
    found = effects(src)
    assert [(e.kind, e.line, e.col, e.guarded) for e in found] == [
        ("save_to_disk", 7, 5, True),
        ("push_to_hub", 8, 5, True),
        ("save_to_disk", 10, 5, False),  # the else branch runs on every other rank
    ]


@pytest.mark.parametrize(
    "test",
    [
        "accelerator.is_main_process",
        "accelerator.is_local_main_process",
        "state.is_main_process",
        "PartialState().is_main_process",
        "trainer.is_world_process_zero()",
        "trainer.is_local_process_zero()",
        "training_args.should_save",
        "args.local_rank in (-1, 0)",
        "args.local_rank in [-1, 0]",
        "local_rank == 0",
        "0 == local_rank",
        "local_rank <= 0",
        "rank == 0",
        "global_rank == 0",
        "not rank",
        'int(os.environ["RANK"]) == 0',
        'os.environ.get("LOCAL_RANK", "0") == "0"',
        'int(os.getenv("LOCAL_RANK", -1)) in (-1, 0)',
        "dist.get_rank() == 0",
        "torch.distributed.get_rank() == 0",
        "is_main_process(training_args.local_rank)",
        "is_rank_0()",
        "accelerator.process_index == 0",
        "accelerator.is_main_process and args.output_dir is not None",
        "args.push_to_hub and accelerator.is_main_process",
        "accelerator.is_main_process == True",
        "not (rank != 0)",
    ],
)
def test_recognised_guards(test):
    src = f"""\
        import os
        if {test}:
            model.save_pretrained("out")
    """
    assert only(src).guarded


@pytest.mark.parametrize(
    "test",
    [
        '__name__ == "__main__"',
        "args.push_to_hub",
        "accelerator.is_main_process or args.save_on_each_node",
        "not accelerator.is_main_process",
        "rank != 0",
        "local_rank > 0",
        "node_rank == 0",  # every local rank of node 0
        "accelerator.num_processes == 1 or rank",
    ],
)
def test_not_guards(test):
    src = f"""\
        if {test}:
            model.save_pretrained("out")
    """
    assert not only(src).guarded


def test_negated_guard_guards_its_else_branch_only():
    src = """\
        if not accelerator.is_main_process:
            model.save_pretrained("a")
        else:
            model.save_pretrained("b")
        if dist.get_rank() != 0:
            pass
        elif args.save:
            model.save_pretrained("c")
    """
    assert [(e.line, e.guarded) for e in effects(src)] == [(2, False), (4, True), (8, True)]


def test_guard_alias_nanogpt_style():
    src = """\
        import os
        import torch

        ddp = int(os.environ.get("RANK", -1)) != -1
        if ddp:
            ddp_rank = int(os.environ["RANK"])
            master = ddp_rank == 0
        else:
            master = True
        if master:
            os.makedirs("out", exist_ok=True)
        torch.save({"step": 1}, "out/ckpt.pt")
    """
    found = effects(src)
    assert [(e.kind, e.call, e.guarded) for e in found] == [
        ("makedirs", "os.makedirs", True),
        ("torch_save", "torch.save", False),
    ]


def test_short_circuit_and_conditional_expression():
    src = """\
        accelerator.is_main_process and model.save_pretrained("a")
        args.debug or model.save_pretrained("b")
        model.save_pretrained("c") if rank == 0 else None
    """
    assert [e.guarded for e in effects(src)] == [True, False, True]


# --- early exits ------------------------------------------------------------------------------


def test_guarded_by_early_return():
    src = """\
        import json

        def save_results(accelerator, model, metrics, out):
            if not accelerator.is_main_process:
                return
            model.save_pretrained(out)
            with open(f"{out}/metrics.json", "w") as fh:
                json.dump(metrics, fh)

        def save_more(model, out):
            if dist.get_rank() != 0:
                return None
            model.save_pretrained(out)

        save_results(acc, model, {}, "out")
        save_more(model, "out")
    """
    found = effects(src)
    assert [(e.kind, e.line, e.guarded, e.function) for e in found] == [
        ("save_pretrained", 6, True, "save_results"),
        ("open_write", 7, True, "save_results"),
        ("save_pretrained", 13, True, "save_more"),
    ]


def test_early_exit_forms():
    src = """\
        import sys

        if not accelerator.is_main_process:
            sys.exit(0)
        model.save_pretrained("a")

        for epoch in range(3):
            if rank != 0:
                continue
            model.save_pretrained("b")
        model.save_pretrained("c")
    """
    assert [(e.line, e.guarded) for e in effects(src)] == [(5, True), (10, True), (11, True)]


def test_early_return_in_a_nested_block_only_guards_that_block():
    src = """\
        def f(model):
            for path in ["a", "b"]:
                if rank != 0:
                    break
                model.save_pretrained(path)
            model.save_pretrained("after-loop")

        f(model)
    """
    assert [(e.line, e.guarded) for e in effects(src)] == [(5, True), (6, False)]


def test_early_return_inside_with_carries_past_the_with():
    src = """\
        def f(model):
            with torch.no_grad():
                if not accelerator.is_main_process:
                    return
            model.save_pretrained("out")

        f(model)
    """
    assert only(src).guarded


def test_guard_not_in_this_function_does_not_count():
    src = """\
        def check(accelerator):
            if not accelerator.is_main_process:
                return

        def save(model):
            model.save_pretrained("out")

        check(acc)
        save(model)
    """
    assert not only(src).guarded


# --- decorators -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "decorator",
    [
        "@accelerator.on_main_process",
        "@accelerator.on_local_main_process",
        "@on_main_process",
        "@rank_zero_only",
        "@accelerator.on_process(process_index=0)",
    ],
)
def test_rank_zero_decorators(decorator):
    src = f"""\
        {decorator}
        def save(model):
            model.save_pretrained("out")

        save(model)
    """
    assert only(src).guarded


# --- interprocedural --------------------------------------------------------------------------


def test_helper_only_called_under_guard():
    src = """\
        import torch
        from accelerate import Accelerator

        def save_checkpoint(model, step):
            torch.save(model.state_dict(), f"ckpt-{step}.pt")

        def maybe_save(model, step):
            save_checkpoint(model, step)

        def main():
            accelerator = Accelerator()
            model = accelerator.prepare(build())
            for step in range(10):
                train_step(model)
                if accelerator.is_main_process:
                    maybe_save(model, step)
            if accelerator.is_main_process:
                save_checkpoint(model, "final")

        if __name__ == "__main__":
            main()
    """
    e = only(src)
    assert (e.kind, e.call, e.line, e.col, e.guarded, e.function) == (
        "torch_save",
        "torch.save",
        5,
        5,
        True,
        "save_checkpoint",
    )


def test_helper_called_once_guarded_once_not():
    src = """\
        def save(model, out):
            model.save_pretrained(out)

        def main():
            if accelerator.is_main_process:
                save(model, "best")
            save(model, "last")

        if __name__ == "__main__":
            main()
    """
    e = only(src)
    assert (e.guarded, e.function) == (False, "save")


def test_main_under_dunder_main_is_not_guarded():
    src = """\
        def main():
            model.save_pretrained("out")

        if __name__ == "__main__":
            main()
    """
    assert not only(src).guarded


def test_function_never_called_is_unguarded():
    # e.g. a TrainerCallback hook: the Trainer calls it on every rank
    src = """\
        from transformers import TrainerCallback

        class Dump(TrainerCallback):
            def on_save(self, args, state, control, **kwargs):
                with open("last_step.txt", "w") as fh:
                    fh.write(str(state.global_step))
                if state.is_world_process_zero:
                    kwargs["model"].save_pretrained("copy")
    """
    found = effects(src)
    assert [(e.kind, e.guarded, e.function) for e in found] == [
        ("open_write", False, "Dump.on_save"),
        ("save_pretrained", True, "Dump.on_save"),
    ]


def test_method_called_through_self_under_guard_and_recursion():
    src = """\
        class Loop:
            def run(self):
                if self.accelerator.is_main_process:
                    self._save(3)

            def _save(self, n):
                self.model.save_pretrained(f"out-{n}")
                if n:
                    self._save(n - 1)

        Loop().run()
    """
    e = only(src)
    assert (e.guarded, e.function) == (True, "Loop._save")


def test_function_passed_as_callback_counts_as_unguarded_use():
    src = """\
        import fire

        def main(out="out"):
            model.save_pretrained(out)

        if __name__ == "__main__":
            fire.Fire(main)
    """
    assert not only(src).guarded


def test_nested_function_name():
    src = """\
        def outer():
            def inner():
                model.save_pretrained("x")
            if rank == 0:
                inner()

        outer()
    """
    e = only(src)
    assert (e.guarded, e.function) == (True, "outer.inner")


# --- rank-aware library methods ---------------------------------------------------------------


def test_trainer_and_accelerator_methods_are_not_side_effects():
    src = """\
        from accelerate import Accelerator
        from transformers import Trainer, TrainingArguments

        accelerator = Accelerator()
        args = TrainingArguments(output_dir="out")
        trainer = Trainer(model=model, args=args, train_dataset=ds)
        trainer.train()
        trainer.save_model()
        trainer.save_state()
        trainer.push_to_hub()
        trainer.save_metrics("train", {})
        accelerator.save(model.state_dict(), "m.pt")
        accelerator.save_model(model, "out")
        accelerator.save_state("ckpt")
        trainer.model.save_pretrained("out2")
    """
    result = facts(src)
    assert result.uses_trainer
    assert [(e.call, e.line) for e in result.side_effects] == [("trainer.model.save_pretrained", 15)]


def test_trl_trainer_instance_under_another_name():
    src = """\
        from trl import SFTTrainer

        sft = SFTTrainer(model=model, train_dataset=ds)
        sft.train()
        sft.save_model("out")
        sft.push_to_hub()
    """
    result = facts(src)
    assert result.uses_trainer
    assert result.side_effects == ()


def test_lightning_trainer_is_not_an_hf_trainer():
    src = """\
        import lightning as L

        trainer = L.Trainer(devices=2)
        trainer.fit(model)
    """
    assert not facts(src).uses_trainer


def test_trainer_subclass_hooks():
    src = """\
        from transformers import Trainer

        class MyTrainer(Trainer):
            def _save(self, output_dir=None, state_dict=None):
                self.model.save_pretrained(output_dir)

            def save_model(self, output_dir=None, _internal_call=False):
                open("saved.txt", "w").close()
                super().save_model(output_dir, _internal_call)

            def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                self.save_model()
                return model(**inputs).loss

        trainer = MyTrainer(model=model)
        trainer.train()
    """
    result = facts(src)
    assert result.uses_trainer
    # Trainer calls _save only where args.should_save; save_model itself runs on every rank
    assert [(e.kind, e.guarded, e.function) for e in result.side_effects] == [
        ("save_pretrained", True, "MyTrainer._save"),
        ("open_write", False, "MyTrainer.save_model"),
    ]


def test_save_pretrained_with_is_main_process_kwarg():
    src = """\
        unwrapped = accelerator.unwrap_model(model)
        unwrapped.save_pretrained(
            "out", is_main_process=accelerator.is_main_process, save_function=accelerator.save
        )
        unwrapped.save_pretrained("out2", is_main_process=True)
    """
    assert [e.guarded for e in effects(src)] == [True, False]


# --- open() and other writers -----------------------------------------------------------------


def test_open_read_not_flagged_write_flagged():
    src = """\
        import json
        from pathlib import Path

        with open("config.json") as fh:
            cfg = json.load(fh)
        with open("config.json", "r") as fh:
            cfg = json.load(fh)
        with open("data.bin", mode="rb") as fh:
            raw = fh.read()
        with open("metrics.json", "w") as fh:
            json.dump(cfg, fh)
        log = open("train.log", "a")
        out = open("out.bin", mode="wb")
        Path("notes.txt").write_text("hello")
        with Path("o.txt").open("w") as fh:
            fh.write("x")
        with Path("i.txt").open() as fh:
            fh.read()
        with open(path, mode) as fh:
            pass
    """
    found = effects(src)
    assert [(e.kind, e.call, e.line, e.col) for e in found] == [
        ("open_write", "open", 10, 6),
        ("open_write", "open", 12, 7),
        ("open_write", "open", 13, 7),
        ("open_write", "Path('notes.txt').write_text", 14, 1),
        ("open_write", "Path('o.txt').open", 15, 6),
    ]
    assert not any(e.guarded for e in found)


def test_other_writers():
    src = """\
        import logging
        import os
        import shutil
        from pathlib import Path

        import numpy as np
        import pandas as pd
        import torch as th
        import wandb
        from safetensors.torch import save_file
        from torch.utils.tensorboard import SummaryWriter

        df = pd.DataFrame()
        text = df.to_csv()
        df.to_csv("out.csv")
        df.to_json(path_or_buf="out.json")
        ds.to_parquet("out.parquet")
        os.makedirs("out", exist_ok=True)
        Path("out").mkdir(parents=True, exist_ok=True)
        logging.basicConfig(level=logging.INFO)
        logging.basicConfig(filename="train.log")
        handler = logging.FileHandler("train.log")
        shutil.copy("a", "b")
        shutil.rmtree("tmp")
        th.save(model.state_dict(), "m.pt")
        np.save("arr.npy", arr)
        save_file(tensors, "m.safetensors")
        wandb.init(project="p")
        writer = SummaryWriter("runs")
        print("done")
        json_text = json.dumps({})
    """
    kinds = [(e.kind, e.line) for e in effects(src)]
    assert kinds == [
        ("to_csv", 15),
        ("to_json", 16),
        ("to_parquet", 17),
        ("makedirs", 18),
        ("mkdir", 19),
        ("log_file", 21),
        ("log_file", 22),
        ("shutil_copy", 23),
        ("rmtree", 24),
        ("torch_save", 25),
        ("numpy_save", 26),
        ("safetensors_save", 27),
        ("wandb_init", 28),
        ("tensorboard_writer", 29),
    ]


# --- main_process_first -----------------------------------------------------------------------


def test_main_process_first_is_a_barrier_not_a_guard():
    # Every rank runs the body (rank 0 first, the others after a barrier), so a write inside it
    # still happens once per rank; the dataset.map inside it is the intended use and not flagged.
    src = """\
        with accelerator.main_process_first():
            tokenized = dataset.map(tokenize, batched=True)
            tokenized.save_to_disk("cache/tok")
        with training_args.main_process_first(desc="dataset map pre-processing"):
            dataset.to_json("cache/raw.json")
        with state.main_process_first():
            if state.is_main_process:
                dataset.save_to_disk("cache/ok")
    """
    assert [(e.kind, e.line, e.guarded) for e in effects(src)] == [
        ("save_to_disk", 3, False),
        ("to_json", 5, False),
        ("save_to_disk", 8, True),
    ]


# --- device_map="auto" ------------------------------------------------------------------------


def test_device_map_auto_positions():
    src = """\
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained("m", device_map="auto")
        model_kwargs = dict(torch_dtype="bfloat16", device_map='auto')
        other = {"device_map": "auto", "x": 1}
        model2 = AutoModelForCausalLM.from_pretrained(
            "m",
            device_map="balanced",
        )
        device_map = "auto"
        model3 = AutoModelForCausalLM.from_pretrained("m", device_map={"": 0})
        # device_map="auto" in a comment
        note = 'device_map="auto" in a string'
    """
    assert facts(src).device_map_auto == ((3, 62), (4, 56), (5, 24), (10, 14))


def test_device_map_auto_column_counts_characters_not_bytes():
    src = 'x = f("é", device_map="auto")\n'
    assert analyse_script(src).device_map_auto == ((1, 23),)


def test_positions_are_character_based():
    src = 'msg = "héllo"; model.save_pretrained("out")\n'
    e = only(src)
    assert (e.line, e.col) == (1, 16)


# --- bad input --------------------------------------------------------------------------------


def test_syntax_error_reported_not_raised():
    src = "import torch\n\ndef main(:\n    pass\n"
    result = analyse_script(src)
    assert result.side_effects == ()
    assert result.syntax_error is not None
    message, line, col = result.syntax_error
    assert message
    assert line == 3
    assert col >= 1


@pytest.mark.parametrize(
    "src",
    [
        "x = (\n",
        "if True:\npass\n",
        "a\0b = 1\n",
        "print 'hello'\n",
        "x = 1 +\n",
    ],
)
def test_bad_sources_never_raise(src):
    result = analyse_script(src)
    assert result.syntax_error is not None
    assert result.syntax_error[1] >= 1 and result.syntax_error[2] >= 1


def test_huge_file_rejected():
    src = "x = 1\n" * (MAX_SCRIPT_BYTES // 6 + 10)
    result = analyse_script(src)
    assert result.syntax_error is not None
    assert "larger than" in result.syntax_error[0]


def test_deep_nesting_does_not_raise():
    src = "x = " + "(" * 150 + "1" + ")" * 150 + "\n"
    result = analyse_script(src)
    assert result.syntax_error is None or result.syntax_error[0]
    long_chain = "x = " + " + ".join(["1"] * 20000) + "\n"
    result = analyse_script(long_chain)  # deep BinOp tree: may be refused, never raises
    assert isinstance(result, ScriptFacts)


def test_empty_and_bom():
    assert analyse_script("") == ScriptFacts()
    assert analyse_script("\ufeffmodel.save_pretrained('x')\n").side_effects[0].col == 1


# --- a realistic script on disk ---------------------------------------------------------------


def test_realistic_no_trainer_script():
    result = analyse_script((SCRIPTS / "run_clm_no_trainer.py").read_text(encoding="utf-8"))
    assert result.syntax_error is None
    assert not result.uses_trainer
    got = [(e.kind, e.line, e.guarded, e.function) for e in result.side_effects]
    assert got == [
        ("makedirs", 27, True, "main"),
        ("log_file", 29, False, "main"),
        ("save_to_disk", 48, False, "main"),
        ("save_pretrained", 64, True, "save_all"),
        ("open_write", 65, True, "save_all"),
        ("push_to_hub", 71, True, "publish"),
    ]
    assert result.device_map_auto == ((36, 69),)
