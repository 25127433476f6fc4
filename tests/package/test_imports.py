"""The closed forms, the property checks and the quick CLI commands never import the LP stack."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

LP_STACK = ("cvxpy", "scipy", "highspy", "clarabel")


def _imported_after(code: str) -> list[str]:
    """Top-level LP-stack packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    return [name for name in LP_STACK if name in loaded]


@pytest.mark.parametrize("module", ["countdp", "countdp.mechanisms.properties", "countdp.mechanisms.closed_forms",
                                    "countdp.design.constraints", "countdp.cli"])
def test_import_needs_no_lp_stack(module):
    assert _imported_after(f"import {module}") == []


def test_property_checks_and_closed_forms_run_without_lp_stack():
    code = ("import numpy as np\nfrom countdp.mechanisms.closed_forms import CLOSED_FORMS\n"
            "from countdp.mechanisms.properties import check_all, check_dp\n"
            "from countdp.privacy.certify import certify\n"
            "P, certificate = certify(CLOSED_FORMS['EM'](9, 0.8), 0.8)\n"
            "assert all(c.holds for c in check_all(P).values()) and check_dp(P, 0.8).holds")
    assert _imported_after(code) == []


def test_closed_form_design_and_check_commands_import_no_lp_stack(tmp_path):
    """``countdp design GM|EM|UM`` and ``countdp check`` (in one interpreter: none may load the stack)."""
    code = "from countdp.cli import main\n"
    for mechanism in ("GM", "EM", "UM"):
        out = tmp_path / f"{mechanism}.json"
        code += (f"assert main(['design', '{mechanism}', '--n', '6', '--alpha', '0.9', '--out', r'{out}']) == 0\n"
                 f"assert main(['check', r'{out}']) == 0\n")
    assert _imported_after(code) == []
    for mechanism in ("GM", "EM", "UM"):
        assert json.loads((tmp_path / f"{mechanism}.json").read_text())["mechanism"] == mechanism


def test_the_probe_sees_the_lp_stack_when_it_is_loaded():
    """The probe itself sees scipy once the LP model is imported (so the checks above can fail)."""
    assert "scipy" in _imported_after("import countdp.design.model")


@pytest.mark.parametrize("first", ["countdp.release.engine", "countdp.release.ledger", "countdp"])
def test_the_sampler_stays_countdp_release_whatever_is_imported(first):
    """``countdp.release`` is the exact sampler of the public API and ``countdp.release.*`` the table release's
    modules: importing one of those modules, before or after the package, leaves the sampler in place."""
    code = (f"import {first}\nimport countdp, countdp.release.engine, countdp.release.draws\n"
            "from countdp.release import ledger\nimport countdp.privacy.sampling as s\n"
            "assert countdp.release is s.release, countdp.release\n"
            "print(countdp.release(countdp.design_named('GM', 4, '1/2'), [2], None).shape)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "(1,)", result.stderr
