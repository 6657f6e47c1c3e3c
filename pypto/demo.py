"""The main job for now: ``python -m pypto.demo``.

Runs the code blocks of the precision-workflow page on the simulator and prints what they show:

(a) INT32 -> FP16 cast on ``a2a3sim`` and ``a5sim``, bit-compared with torch's own conversion on
    the boundary values of the "multi-hop cast" argument, with the lowered cast chain per platform
    (on a5 ``LegalizeTileCast`` expands it to INT32 -> FP32 -> FP16).
(b) ``torch_codegen``: lower the fused ``(a + b) * 2.0`` kernel, print the generated torch source,
    execute it and compare with torch eager; run the same kernel on both simulators.

Exits with status 1 if any check fails. Kernels live at module level because kernel source is
read from this file (it is parsed, never executed).
"""
from __future__ import annotations

import sys
import time

import torch

import pypto.language as pl
from pypto.debug import torch_codegen
from pypto.runtime import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
ROWS, COLS = 16, 128


@pl.jit
def to_fp16(x: pl.Tensor[[ROWS, COLS], pl.INT32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out


@pl.jit
def to_fp16_rint(x: pl.Tensor[[ROWS, COLS], pl.INT32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16, mode="rint")
    return out


@pl.jit
def fused(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


# The three ranges of the argument: exact in FP16, past FP16's limit, past 2^24 (the FP32 hop rounds).
BOUNDARY = [0, 1, 2048, 65504, 65505, 65519, 65520, 70000, 1 << 20, 1 << 24, (1 << 24) + 1, 1 << 25,
            -65504, -65519, -65520, -70000]


class Report:
    """Collects PASS/FAIL lines; the exit status is the verdict."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        print(f"  [{'PASS' if ok else 'FAIL'}] {what}" + (f"  ({detail})" if detail else ""))
        if not ok:
            self.failures.append(what)
        return ok


def _fmt(v: float) -> str:
    return str(int(v)) if v == v and abs(v) != float("inf") and v == int(v) else str(v)


def _bits_equal(x: torch.Tensor, y: torch.Tensor) -> bool:
    return torch.equal(x.view(torch.int16), y.view(torch.int16))


def _cast_chain(kernel, values, cfg) -> list[str]:
    """The ``pl.tile.cast`` lines of the lowered IR, as ``name = pl.tile.cast(...)``."""
    text = kernel.lower(values, torch.zeros(ROWS, COLS, dtype=torch.float16), config=cfg).as_python()
    chain = []
    for ln in text.splitlines():
        if "pl.tile.cast(" in ln:
            lhs, _, call = ln.strip().partition(" = ")
            chain.append(f"{lhs.split(':')[0]} = {call}")
    return chain


def demo_cast(rep: Report) -> None:
    print("== (a) INT32 -> FP16 cast: PyPTO vs torch, bit for bit ==")
    # The seed page's block: boundary values in row 0, zeros elsewhere, default rounding mode.
    values = torch.zeros(ROWS, COLS, dtype=torch.int32)
    values[0, :len(BOUNDARY)] = torch.tensor(BOUNDARY, dtype=torch.int32)
    expected = values.to(torch.float16)

    results = {}
    for platform in PLATFORMS:
        cfg = RunConfig(platform=platform)
        chain = _cast_chain(to_fp16, values, cfg)
        hops = " -> ".join(["INT32"] + [c.rsplit("pl.", 1)[1].split(")")[0].split(",")[0] for c in chain])
        print(f"-- {platform}: lowered cast chain {hops} ({len(chain)} hop{'s' if len(chain) != 1 else ''})")
        for c in chain:
            print(f"     {c}")
        out = torch.zeros(ROWS, COLS, dtype=torch.float16)
        to_fp16(values, out, config=cfg)
        results[platform] = out
        same = _bits_equal(out, expected)
        bad = (out.view(torch.int16) != expected.view(torch.int16)).nonzero()[:4].tolist()
        rep.check(same, f"{platform}: to_fp16 bit-identical to torch's int32->fp16 (boundary block)",
                  "" if same else f"differs at {bad}")
    rep.check(_bits_equal(results["a2a3sim"], results["a5sim"]),
              "a2a3sim (one hop) and a5sim (two hops) agree bit for bit")

    print("-- boundary values (row 0):")
    print(f"     {'int32':>10}  {'torch fp16':>10}  " + "  ".join(f"{p:>10}" for p in PLATFORMS))
    for i, v in enumerate(BOUNDARY):
        cells = "  ".join(f"{_fmt(results[p][0, i].item()):>10}" for p in PLATFORMS)
        print(f"     {v:>10}  {_fmt(expected[0, i].item()):>10}  {cells}")
    print("     65519 -> 65504 but 65520 -> inf: FP16 overflow starts at 65520, not 65504.")

    # Beyond the boundary block: random integers in (-2^20, 2^20) include ties (e.g. 2049 lies
    # halfway between FP16 neighbours 2048 and 2050). torch rounds ties to even, which is
    # mode="rint"; pl.cast's default mode "round" rounds ties away from zero.
    rnd = torch.randint(-(1 << 20), 1 << 20, (ROWS, COLS), dtype=torch.int32,
                        generator=torch.Generator().manual_seed(0))
    rnd[0, :4] = torch.tensor([2049, 2051, -2049, 4097], dtype=torch.int32)
    for platform in PLATFORMS:
        out = torch.zeros(ROWS, COLS, dtype=torch.float16)
        to_fp16_rint(rnd, out, config=RunConfig(platform=platform))
        rep.check(_bits_equal(out, rnd.to(torch.float16)),
                  f"{platform}: mode='rint' bit-identical to torch on {rnd.numel()} random int32 (ties included)")
    out = torch.zeros(ROWS, COLS, dtype=torch.float16)
    to_fp16(rnd, out, config=RunConfig(platform="a5sim"))
    rep.check(out[0, 0].item() == 2050.0 and rnd.to(torch.float16)[0, 0].item() == 2048.0,
              "default mode='round' is ties-away: 2049 -> 2050 (torch, ties-to-even: 2048)")


def demo_torch_codegen(rep: Report) -> None:
    print()
    print("== (b) torch_codegen: the IR's meaning, executed on the host ==")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(64, 128, generator=gen)
    b = torch.randn(64, 128, generator=gen)
    want = (a + b) * 2.0

    src = torch_codegen(fused.lower(a, b, torch.zeros(64, 128)))
    print("-- generated source for fused (lowered on a2a3sim):")
    for ln in src.splitlines():
        print("   | " + ln)
    ns: dict = {}
    exec(compile(src, "<torch_codegen:fused>", "exec"), ns)
    ref_out = torch.zeros(64, 128)
    ns["fused"](a, b, ref_out)
    rep.check(torch.equal(ref_out, want), "exec(torch_codegen(fused.lower(...))) == torch (a + b) * 2.0, exactly")

    for platform in PLATFORMS:
        out = torch.zeros(64, 128)
        fused(a, b, out, config=RunConfig(platform=platform))
        rep.check(torch.equal(out, want), f"{platform}: fused == torch (a + b) * 2.0, exactly",
                  "" if torch.equal(out, want) else f"max abs diff {(out - want).abs().max().item():.3g}")


# The seed page's table: the step that settles each worked case.
CASE_STEPS = {1: 4, 2: 2, 3: 2, 4: 2, 5: 5}
CASE_FILES = {1: "case1_faulty_pass", 2: "case2_a5_cast_chain", 3: "case3_padding_row_max", 4: "case4_split_k",
              5: "case5_war"}


def demo_cases(rep: Report) -> None:
    """The five worked cases of docs/precision: each script asserts its own conclusion, then
    `pypto doctor` gets only the kernel, the inputs and the golden and must settle it at the step
    the seed page gives."""
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    from pypto.debug.doctor import doctor

    here = Path(__file__).resolve().parent.parent / "examples" / "precision"
    if not here.is_dir():
        rep.check(False, f"examples/precision not found next to the package ({here})")
        return
    sys.path.insert(0, str(here))
    import doctor_cases

    print("\n== The five worked cases (docs/precision), each settled by pypto doctor ==")
    for n in sorted(CASE_FILES):
        mod = __import__(CASE_FILES[n])
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            conclusion = mod.main()
            case = getattr(doctor_cases, f"case{n}")()
            report = doctor(case.pop("kernel"), case.pop("inputs"), html=Path(tempfile.mkdtemp()) / "doctor.html",
                            **case)
        print(f"case {n}: {conclusion}")
        print(f"        doctor: settled at step {report.settled_step}: {report.conclusion}")
        print(f"        fix: {report.fix[:160]}{'...' if len(report.fix) > 160 else ''}")
        rep.check(report.settled_step == CASE_STEPS[n],
                  f"case {n}: doctor settles at step {CASE_STEPS[n]} as the seed page says")


def main() -> int:
    t0 = time.perf_counter()
    rep = Report()
    for step in (demo_cast, demo_torch_codegen, demo_cases):
        try:
            step(rep)
        except Exception as exc:  # a crash is a failed check, reported, not a traceback wall
            rep.check(False, f"{step.__name__} raised {type(exc).__name__}: {exc}")
    print()
    dt = time.perf_counter() - t0
    if rep.failures:
        print(f"FAILED: {len(rep.failures)} check(s) failed in {dt:.1f}s: " + "; ".join(rep.failures))
        return 1
    print(f"OK: all checks passed in {dt:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
