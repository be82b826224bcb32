"""The runtime's rooms: each one's public names resolve, the torch-free ones import no torch, and
dependencies point one way (policies <- sim <- calib; policies <- generation <- executors)."""

from importlib import import_module

import pytest

from import_graph import import_graph, imported_after

ROOMS = ("policies", "sim", "calib", "generation", "executors")
# what each room may import of the others: nothing else, and never a room importing back
MAY_IMPORT = {
    "policies": set(),
    "sim": {"policies"},
    "calib": {"policies", "sim"},
    "generation": {"policies"},
    "executors": {"policies", "generation"},
}
HEAVY = ("torch", "transformers", "ray")


@pytest.mark.parametrize("room", ROOMS)
def test_every_public_name_resolves(room):
    package = import_module(f"rlguard.runtime.{room}")
    for name in package.__all__:
        assert getattr(package, name) is not None, f"{room}.{name}"
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = package.Nope


def test_the_torch_free_rooms_import_no_torch():
    code = "import rlguard.runtime.sim, rlguard.runtime.policies, rlguard.runtime.calib"
    assert imported_after(code, HEAVY) == set()
    resolve_all = "\n".join(
        f"import rlguard.runtime.{room} as r\nfor name in r.__all__: getattr(r, name)"
        for room in ("policies", "sim", "calib")
    )
    assert imported_after(resolve_all, HEAVY) == set()


def test_the_torch_rooms_load_torch_only_when_used():
    code = "import rlguard.runtime.generation, rlguard.runtime.executors"
    assert imported_after(code, HEAVY) == set()
    assert imported_after("from rlguard.runtime.executors import FaultPlan", HEAVY) == set()


def test_rooms_import_only_the_rooms_below_them():
    graph = import_graph("rlguard.runtime")
    loose = [m for m in graph if m.count(".") == 2 and m != "rlguard.runtime"]
    assert loose == [f"rlguard.runtime.{room}" for room in sorted(ROOMS)]  # rooms only, no modules
    for module, imports in graph.items():
        room = module.split(".")[2] if module.count(".") >= 2 else None
        if room is None:
            continue
        for target in imports:
            other = target.split(".")[2] if target.count(".") >= 2 else None
            assert other is None or other == room or other in MAY_IMPORT[room], (
                f"{module} imports {target}"
            )
