"""Words bash evaluates as code although they are quoted (permissions/evaluation.py).

Each line below makes bash 5.2 run `touch MARKER` from inside a quoted string, an
arithmetic expression, a subscript or a variable's value. The first test proves it with
real bash (so the table cannot hold cases that do nothing); the others check that the
policy never allows such a line: denied under `never-ask` with no rules at all, asked
about in `ask`, and in `full-auto`, where the hidden command could also write outside
the workspace. Controls show that the same constructs with plain numbers and names run
without a question.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codecoder import paths
from codecoder.kernel.events import ConfirmRequest, ToolFinished
from codecoder.permissions import RulePolicy
from codecoder.permissions.modes import ApprovalMode
from codecoder.permissions.shell import parse_command

from .helpers import World, drive, run

CODE = "$(touch MARKER)0"
"""Shell code in a subscript: the `0` keeps the arithmetic valid once it has run."""

EVALUATED = {
    "[[ -v ]] on a quoted subscript": f"[[ -v 'a[{CODE}]' ]]",
    "[ -v ] on a quoted subscript": f"[ -v 'a[{CODE}]' ]",
    "test -v": f"test -v 'a[{CODE}]'",
    "[[ -eq ]] on a quoted operand": f"[[ 'a[{CODE}]' -eq 1 ]]",
    "[[ -lt ]] on the right": f"[[ 1 -lt 'a[{CODE}]' ]]",
    "[[ -eq ]] on a variable's value": f"x='a[{CODE}]'; [[ x -eq 1 ]]",
    "[[ $x -ge ]]": f"x='a[{CODE}]'; [[ $x -ge 0 ]]",
    "(( )) on a quoted string": f"(( 'a[{CODE}]' ))",
    "(( )) on a variable's value": f"x='a[{CODE}]'; (( x ))",
    "$(( )) on a variable's value": f"x='a[{CODE}]'; echo $((x))",
    "$(( )) on two variables": f"x=1; y='a[{CODE}]'; echo $(( x + y ))",
    "$[ ]": f"echo $[ 'a[{CODE}]' ]",
    "let": f"let 'a[{CODE}]'",
    "declare with a quoted subscript": f"declare 'a[{CODE}]=1'",
    "typeset": f"typeset 'a[{CODE}]=1'",
    "local in a function": f"f(){{ local 'a[{CODE}]=1'; }}; f",
    "declare -i then assign": f"declare -i x; x='a[{CODE}]'",
    "declare -a with a quoted compound value": f"declare -a 'a=([{CODE}]=1)'",
    "declare -n reference": f"declare -n r='a[{CODE}]'; echo $r",
    "unset of an array element": f"a=(1 2); unset 'a[{CODE}]'",
    "printf -v": f"printf -v 'a[{CODE}]' x",
    "read into a subscript": f"read 'a[{CODE}]' <<< x",
    "read in a pipeline": f"echo x | read 'a[{CODE}]'",
    "indirect expansion": f"x='a[{CODE}]'; echo ${{!x}}",
    "compound assignment": f"a=(['a[{CODE}]']=1)",
    "append to an array": f"x=(); x+=(['a[{CODE}]']=1)",
    "subscript of an assignment": f"a['{CODE}']=1",
    "subscript names a variable": f"x='a[{CODE}]'; a[x]=1",
    "subscript of an expansion": f"x='a[{CODE}]'; echo ${{a[x]}}",
    "C-style for": f"for ((i='a[{CODE}]';0;)); do :; done",
    "arithmetic in a case word": f"x='a[{CODE}]'; case 1 in $((x))) ;; esac",
    "-v on an associative array": f"declare -A m; [[ -v 'm[{CODE}]' ]]",
    "PS4 with set -x": "PS4='$(touch MARKER)'; set -x; true",
    "BASH_ENV of a child bash": "BASH_ENV='$(touch MARKER)' bash -c true",
    "prompt expansion of a value": "x='$(touch MARKER)'; echo ${x@P}",
    "value read from a file": f"echo 'a[{CODE}]' > v; x=$(cat v); echo $((x))",
    "loop variable over file names": f"touch 'a[{CODE}]'; for f in a*; do (( f )); done",
    "default assignment": f": ${{x:='a[{CODE}]'}}; (( x ))",
    "last argument `_`": f"true 'a[{CODE}]'; (( _ ))",
    # found by the adversarial review of this layer
    "RANDOM is an integer": f"RANDOM='a[{CODE}]'",
    "OPTIND is an integer": f"export OPTIND='a[{CODE}]'",
    "single quotes in a quoted default": "echo \"${x:-'$(touch MARKER)'}\"",
    "a quoted default with backticks": 'echo "${x:=`touch MARKER`}"',
    "backticks nested in backticks": "echo `echo \\`touch MARKER\\``",
    "compgen -W expands its words": "compgen -W '$(touch MARKER)' x",
    "an alias table entry in posix mode": "set -o posix\nBASH_ALIASES[x]='touch MARKER'\nx",
    "a function imported from the environment": (
        "env 'BASH_FUNC_x%%=() { touch MARKER; }' bash -c x"
    ),
    # the second review
    "a redirection's variable name": "echo hi {a['$(touch MARKER)0']}>/dev/null",
    "a here-document line that starts with blanks": (f"x='b[{CODE}]'; cat <<EOF\n  ${{a[x]}}\nEOF"),
    "a quoted array given to declare": "declare -a 'a=($(touch MARKER))'",
    "a quoted associative array": "typeset -A 'h=([k]=$(touch MARKER))'",
}


@pytest.mark.parametrize("case", list(EVALUATED))
def test_bash_really_runs_the_hidden_code(tmp_path: Path, case: str) -> None:
    marker = tmp_path / "MARKER"
    line = EVALUATED[case]
    subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, check=False)
    assert marker.exists(), "not a member of the class: bash does not run it"


@pytest.mark.parametrize("mode", ["never-ask", "ask", "full-auto"])
@pytest.mark.parametrize("case", list(EVALUATED))
def test_the_policy_never_allows_it(tmp_path: Path, mode: ApprovalMode, case: str) -> None:
    line = EVALUATED[case].replace("MARKER", "../pwned")
    decision = RulePolicy(tmp_path, mode).decide(*run(line))
    assert decision.verdict == ("deny" if mode == "never-ask" else "ask"), decision.reason


@pytest.mark.parametrize("case", ["[[ -v ]] on a quoted subscript", "(( )) on a variable's value"])
def test_through_the_kernel_with_no_rules_nothing_runs(world: World, case: str) -> None:
    """The reviewer's reproduction: no rules, `never-ask`, the real run_command."""
    (paths.config_dir() / "config.toml").write_text("")
    line = EVALUATED[case].replace("MARKER", "../pwned")
    events = drive(world, "never-ask", "run_command", {"command": line})
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.error is not None and finished.error.kind == "denied"
    assert not any(isinstance(e, ConfirmRequest) for e in events)
    assert not (world.ws.parent / "pwned").exists()


SAFE = [
    "for ((i=0; i<3; i++)); do echo $i; done",
    "x=5; echo $((x + 1))",
    "count=0; count=$((count+1)); echo $count",
    "echo $(( 16#ff + 0x10 + $# + ${#HOME} ))",
    "[[ -v HOME ]] && echo set",
    "[[ 3 -lt 4 ]]",
    "n=2; echo ${HOME:1:n}",
    "a=(1 2 3); echo ${a[1]} ${a[@]}",
    "declare x=1; export y=2",
    "read -r line < README.md",
    "unset x",
    "printf -v out '%s' x",
]


@pytest.mark.parametrize("line", SAFE)
def test_plain_numbers_and_names_are_nothing_to_worry_about(line: str) -> None:
    assert parse_command(line).problems == (), line
