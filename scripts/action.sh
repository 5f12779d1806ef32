#!/usr/bin/env bash
# The steps of action.yml. Usage: action.sh install | check | finish
#
# Environment (what GitHub Actions sets, plus the action's inputs as INPUT_*):
#   GITHUB_ACTION_PATH  the action's own checkout (installed from here)
#   GITHUB_WORKSPACE    the repository under check (the current folder when unset)
#   GITHUB_BASE_REF     the pull request's base branch (unset on other events)
#   GITHUB_OUTPUT       the file step outputs are appended to
#   RUNNER_TEMP         the runner's temporary folder, outside the workspace (the SARIF goes there)
#   INPUT_PATHS INPUT_HARDWARE INPUT_BASE INPUT_FORMAT INPUT_FAIL_ON INPUT_POLICY_FROM_BASE,
#   PYTHON (default python3)
#   EXIT_CODE           (finish) the check step's exit code
set -euo pipefail

python="${PYTHON:-python3}"

output() {  # name value: a step output (printed too, for the log)
  echo "$1=$2"
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
  fi
}

install() {
  local source="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
  "$python" -m pip install --disable-pip-version-check --quiet "$source"
  "$python" -m advisor --version
}

base_revision() {  # the revision to compare with: the input, else the pull request's base branch
  if [[ -n "${INPUT_BASE:-}" ]]; then
    printf '%s' "$INPUT_BASE"
    return
  fi
  local branch="${GITHUB_BASE_REF:-}"
  [[ -n "$branch" ]] || return 0
  # actions/checkout fetches one commit by default: fetch the base branch when it is missing
  if ! git rev-parse --verify --quiet "refs/remotes/origin/$branch^{commit}" >/dev/null; then
    git fetch --no-tags --quiet origin "+refs/heads/$branch:refs/remotes/origin/$branch" >&2 \
      || echo "gpu-advise: cannot fetch the base branch '$branch'" >&2
  fi
  printf 'origin/%s' "$branch"
}

check() {
  cd "${GITHUB_WORKSPACE:-.}"
  local format="${INPUT_FORMAT:-sarif}" base args=() paths=()
  read -r -a paths <<<"${INPUT_PATHS:-.}"
  [[ ${#paths[@]} -gt 0 ]] || paths=(.)
  base="$(base_revision)"
  # --option=value: a value is never read as an option of its own; the paths follow `--`
  [[ -z "$base" ]] || args+=("--base=$base")
  # a pull request's own settings, rules, directives, baseline and measurements must not relax its gate
  [[ -z "$base" || "${INPUT_POLICY_FROM_BASE:-true}" != true ]] || args+=("--policy-from-base")
  [[ -z "${INPUT_HARDWARE:-}" ]] || args+=("--hardware=$INPUT_HARDWARE")
  [[ -z "${INPUT_FAIL_ON:-}" ]] || args+=("--fail-on=$INPUT_FAIL_ON")
  args+=("--format=$format")
  local sarif=""
  if [[ "$format" == sarif ]]; then
    # a fresh folder outside the workspace: a gpu-advise.sarif committed in the pull request is
    # never what gets uploaded, even when the check exits 2 without writing one
    local folder
    folder="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/gpu-advise.XXXXXXXX")"
    sarif="$folder/gpu-advise.sarif"
    args+=("--output=$sarif")
  fi
  local code=0
  "$python" -m advisor check "${args[@]}" -- "${paths[@]}" || code=$?
  if [[ -n "$sarif" && ! -s "$sarif" ]]; then
    sarif=""  # the tool could not do its job (exit 2): nothing to upload
  fi
  output exit-code "$code"
  output sarif "$sarif"
}

finish() {
  local code="${EXIT_CODE:-0}"
  case "$code" in
    0) ;;
    1) echo "gpu-advise: findings at or above fail-on (see the annotations or code scanning)" >&2 ;;
    *) echo "gpu-advise: the check could not run (exit $code); see the check step's log" >&2 ;;
  esac
  exit "$code"
}

case "${1:-}" in
  install | check | finish) "$1" ;;
  *)
    echo "usage: action.sh install | check | finish" >&2
    exit 2
    ;;
esac
