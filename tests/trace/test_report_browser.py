"""The HTML report (``tcsim report``) opened in a real headless Chromium (Debian's ``chromium``, driven by
playwright's Python API): no console errors, the timeline and the source view render, clicking a finding scrolls
the source view to its line, clicking a stall slice names what released it.

Skipped cleanly where Chromium or playwright is not installed (``.ci/run`` installs Chromium when it is missing).
test_example_reports_render renders the three example reports whose screenshots are in docs/
(``TCSIM_WRITE_SCREENSHOTS=1`` rewrites them); about 5 s each, so CI runs it (issue 19: CI opens three examples'
reports where Chromium is present)."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tcsim.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _open(browser, path, width=1300, height=900):
    page = browser.new_page(viewport={"width": width, "height": height})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(Path(path).as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return page, errors


def _painted(page, color: str) -> int:
    """Pixels of the timeline canvas painted in ``color`` (#rrggbb)."""
    return page.evaluate("""(c) => {
        const cv = document.getElementById('tl-canvas'), g = cv.getContext('2d');
        const d = g.getImageData(0, 0, cv.width, cv.height).data;
        const r = parseInt(c.slice(1, 3), 16), gg = parseInt(c.slice(3, 5), 16), b = parseInt(c.slice(5, 7), 16);
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === r && d[i + 1] === gg && d[i + 2] === b) n++;
        return n; }""", color)


@pytest.fixture(scope="module")
def fence_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "fence.html"
    assert main(["report", "tcsim.examples.bugs.missing_proxy_fence", "-o", str(out)]) == 1     # it has a finding
    return out


def test_report_is_self_contained(fence_report):
    page = fence_report.read_text()
    assert "<script src" not in page and "<link" not in page and "http://" not in page.replace(
        "http://www.w3.org/2000/svg", "")
    assert "https://" not in page


def test_report_renders_and_a_finding_scrolls_the_source(browser, fence_report):
    page, errors = _open(browser, fence_report)
    # the timeline: a row per warp (2 warps of 64 threads), the TMA engine, the findings row; slices painted
    labels = page.evaluate("tcsimReport.rows.map(r => r.label)")
    assert labels[:3] == ["CTA (0,0,0)", "warp 0", "warp 1"] and "TMA engine" in labels and "findings" in labels
    assert _painted(page, "#4a86e8") > 100           # PTX-region slices
    # the source view: every PTX line; line 24 (st.shared) executed once by each of the 2 warps, all 64 threads
    ptx = (ROOT / "examples" / "bugs" / "missing_proxy_fence.ptx").read_text().splitlines()
    assert page.locator("#source tr").count() == len(ptx) + 1
    row = page.locator("#L24 td")
    assert row.nth(8).inner_text().strip() == ptx[23].strip()
    assert (row.nth(1).inner_text(), row.nth(2).inner_text()) == ("2", "64")
    # a short source pane: the finding's line (the TMA store reading the tile, the access that exposed the missing
    # fence) starts out of view; clicking the finding scrolls to it and highlights it
    line = next(i + 1 for i, t in enumerate(ptx) if t.strip().startswith("cp.async.bulk.global"))
    page.add_style_tag(content="#source-wrap { max-height: 100px !important; }")
    visible = "(n) => { const w = document.getElementById('source-wrap').getBoundingClientRect(), " \
              "r = document.getElementById('L' + n).getBoundingClientRect(); " \
              "return r.top >= w.top && r.bottom <= w.bottom; }"
    assert not page.evaluate(visible, line)
    page.click("#findings li.finding")
    assert page.evaluate(visible, line)
    assert "hl" in page.get_attribute(f"#L{line}", "class")
    # ... and selects the finding in the timeline: two arrows into it, from both accesses
    assert page.locator("#tl-details").inner_text().count("arrow from") == 2
    # a real click on warp 0's longest stall slice shows what it waited on
    i, x, y = page.evaluate("""() => { const D = tcsimReport.data, V = tcsimReport.view;
        const w0 = D.tracks.find(t => t.name === 'warp 0').id;
        let best = -1; D.slices.forEach((s, i) => { if (s[0] === w0 && D.cats[s[4]] === 'stall' &&
            (best < 0 || s[2] > D.slices[best][2])) best = i; });
        const s = D.slices[best], row = tcsimReport.rows.find(r => r.track && r.track.id === w0);
        const cv = document.getElementById('tl-canvas').getBoundingClientRect();
        const W = cv.width, x = 230 + (s[1] + s[2] / 2 - V.t0) * (W - 230) / (V.t1 - V.t0);
        return [best, cv.left + x, cv.top + row.y + row.h / 2]; }""")
    page.mouse.click(x, y)
    text = page.locator("#tl-details").inner_text()
    assert "reason" in text and "wait" in text and "cp.async.bulk.wait_group" in text
    assert errors == []
    page.close()


def test_sass_lines_under_their_ptx_lines(browser, fence_report):
    """The source view lists the SASS ptxas made of a PTX line (the committed listing of the example: CI has no
    disassembler): the st.shared line's count opens its STS under it, the switch opens every line's, and the
    address-order listing links each instruction back to its PTX line."""
    page, errors = _open(browser, fence_report)
    ptx = (ROOT / "examples" / "bugs" / "missing_proxy_fence.ptx").read_text().splitlines()
    st = next(i + 1 for i, t in enumerate(ptx) if t.strip().startswith("st.shared"))
    bar = next(i + 1 for i, t in enumerate(ptx) if t.strip().startswith("bar.sync"))
    assert "committed listing bugs.missing_proxy_fence.sm_90a.json" in page.locator("#sass-note").inner_text()
    assert page.locator(".sass-row").count() == 0
    page.click(f"#L{st} a.sass-count")
    assert page.locator(f"#S{st}").inner_text().strip().endswith("STS [R3], R0")
    page.click(f"#L{st} a.sass-count")                        # a second click closes it
    assert page.locator(f"#S{st}").count() == 0
    page.click("#sass-all")
    rows = page.locator(".sass-row")
    n_lines = rows.count()
    assert n_lines > 5 and "BAR.SYNC" in page.locator(f"#S{bar}").inner_text()
    # every row follows its own PTX line
    assert page.evaluate("""() => [...document.querySelectorAll('.sass-row')].every(r =>
        r.previousElementSibling.id === 'L' + r.dataset.line)""")
    page.click("#sass-details summary")
    link = page.locator("#sass-listing tr", has_text="BAR.SYNC").locator("a")
    assert link.inner_text() == f"line {bar}"
    link.click()
    assert "hl" in page.get_attribute(f"#L{bar}", "class")
    assert errors == []
    page.close()


def test_a_run_that_ended_in_an_error_opens_at_it(browser, tmp_path):
    """The report of a deadlocked run (tests/trace/test_error_report.py) opens at the error: its section at the
    top, its PTX line highlighted in the source view, a red line on the timeline where the run stopped; the last
    instruction of the warp links to its line."""
    from tests.trace.test_error_report import DEADLOCK, _data, _launch, _line
    lf, src = _launch(tmp_path, "dead", DEADLOCK)
    out = tmp_path / "dead.html"
    assert main(["run", str(lf), "--report", str(out)]) == 1
    wait = _line(src, "mbarrier.try_wait")
    page, errors = _open(browser, out)
    top = page.evaluate("document.getElementById('error-section').getBoundingClientRect().top")
    assert abs(top) < 2
    assert "deadlock" in page.locator("#error-section h2").inner_text()
    cls = page.get_attribute(f"#L{wait}", "class")
    assert "hl" in cls and "has-error" in cls
    assert _painted(page, "#b3261e") > 20                         # the red line where the run stopped
    if os.environ.get("TCSIM_WRITE_SCREENSHOTS"):
        page.screenshot(path=str(ROOT / "docs" / "report_error_deadlock.png"), full_page=False)
    page.click("#error-warps a")
    assert "hl" in page.get_attribute(f"#L{_data(out)['error']['warps'][0]['line']}", "class")
    assert errors == []
    page.close()


EXAMPLES = ["nvfp4_gemm", "tma_gather_mma_scatter", "gemm_async"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_reports_render(browser, name, tmp_path):
    out = tmp_path / f"{name}.html"
    assert main(["report", f"tcsim.examples.{name}", "-o", str(out)]) == 0
    page, errors = _open(browser, out, 1400, 1050)
    assert errors == []
    assert _painted(page, "#4a86e8") > 100
    # an mbarrier stall names the phase that released it, and that phase's completion lists the warp it woke
    rel = page.evaluate("""() => { const D = tcsimReport.data;
        return D.slices.filter(s => D.cats[s[4]] === 'stall' && s[5].released_by).map(s => s[5].released_by); }""")
    assert rel and all(" phase " in r for r in rel)
    assert page.locator("#mbarrier-chart").count() == 1 and page.locator("#source tr").count() > 50
    # click the longest mbarrier stall: the details panel names the phase that released it, with its arrows
    x, y = page.evaluate("""() => { const D = tcsimReport.data, V = tcsimReport.view;
        let best = -1; D.slices.forEach((s, i) => { if (D.cats[s[4]] === 'stall' && s[5].reason === 'mbarrier' &&
            (best < 0 || s[2] > D.slices[best][2])) best = i; });
        const s = D.slices[best], row = tcsimReport.rows.find(r => r.track && r.track.id === s[0]);
        const cv = document.getElementById('tl-canvas').getBoundingClientRect();
        const x = 230 + (s[1] + s[2] / 2 - V.t0) * (cv.width - 230) / (V.t1 - V.t0);
        return [cv.left + x, cv.top + row.y + row.h / 2]; }""")
    page.mouse.click(x, y)
    details = page.locator("#tl-details").inner_text()
    assert "released_by" in details and "go to the phase completion" in details
    page.click("#released-by-link")         # the completion: an arrow from what completed it, arrows to the warps
    details = page.locator("#tl-details").inner_text()
    assert "phase_done" in details and "arrow from" in details and "arrow to" in details and "woke" in details
    page.evaluate("document.getElementById('timeline-section').scrollIntoView()")
    shot = ROOT / "docs" / f"report_{name}.png" if os.environ.get("TCSIM_WRITE_SCREENSHOTS") else \
        tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=False)
    # the SASS of the tensor-core instructions (the committed listing): the count opens them under the PTX line
    ptx = page.evaluate("tcsimReport.data.source")
    mma = [i + 1 for i, t in enumerate(ptx) if re.match(r"\s*(@!?%\w+\s+)?(tcgen05\.mma|wgmma\.mma_async|mma\.sync)", t)]
    assert mma
    for n in mma[:2]:
        page.click(f"#L{n} a.sass-count")
        assert page.locator(f"#S{n}").count() == 1
    assert re.search(r"UTC\w*MMA|HGMMA|HMMA", page.locator(".sass-row").all_inner_texts()[0] +
                     page.locator("#sass-listing").inner_text())
    page.evaluate(f"tcsimReport.showLine({mma[0]})")
    page.evaluate("document.getElementById('source-section').scrollIntoView()")
    shot = ROOT / "docs" / f"report_{name}_sass.png" if os.environ.get("TCSIM_WRITE_SCREENSHOTS") else \
        tmp_path / f"{name}_sass.png"
    page.screenshot(path=str(shot), full_page=False)
    assert errors == []
    page.close()


def test_sim_vs_gpu_view_opens_at_the_first_divergence(browser, tmp_path):
    """``tcsim diff --report`` against a recorded H100 run whose output we altered in one element: the page opens
    on the comparison, naming the buffer and the element.  A register-value mismatch (as diff_runs reports one)
    opens the source view at its PTX line and selects that warp's region on the timeline."""
    import numpy as np
    from hw.trace import TracedRun

    from tcsim.examples.mma_gemm import make_launch
    from tcsim.launch import run_launch
    from tcsim.report import VisualOutputs

    golden = TracedRun.load(ROOT / "tests" / "hw" / "golden_h100" / "mma_gemm.npz")
    i = next(k for k, o in enumerate(golden.outputs) if o is not None and o.size > 1)
    out = np.array(golden.outputs[i])
    flat = out.reshape(-1).view(np.uint8)
    flat[0] ^= 1                                      # one bit of the first element
    golden.outputs[i] = out
    altered = tmp_path / "altered.npz"
    golden.save(altered)
    page_path = tmp_path / "diff.html"
    assert main(["diff", "tcsim.examples.mma_gemm", "--against", f"golden:{altered}", "--report",
                 str(page_path)]) == 1
    page, errors = _open(browser, page_path, 1300, 900)
    assert "DIFFERENT: 1 output buffer(s)" in page.locator("#diff-verdict").inner_text()
    assert "differs in 1 element(s); first [0" in page.locator("#diff-outputs").inner_text()
    top = page.evaluate("document.getElementById('diff-section').getBoundingClientRect().top")
    assert abs(top) < 2                               # opened there
    assert errors == []
    page.close()

    # a value mismatch at the mma.sync line of warp 0
    ptx = (ROOT / "examples" / "mma_gemm.ptx").read_text().splitlines()
    line = next(k + 1 for k, t in enumerate(ptx) if t.strip().startswith("mma.sync"))
    vo = VisualOutputs(report=tmp_path / "mm.html")
    launch = make_launch()
    res = run_launch(launch, timing=True, observers=vo.observers)
    mism = {"kind": "value", "warp": "cta (0,0,0) warp 0", "lane": 5, "position": 3, "line": line,
            "text": ptx[line - 1].strip(), "reg": "%f1", "cls": "exact", "a": "0x3f800000", "b": "0x3f800001",
            "note": ""}
    vo.write(res, launch, diff={"a_name": "sim", "b_name": "gpu", "kernel": "mma_gemm", "identical": False,
                                "outputs": [], "mismatches": [mism], "n_value_mismatches": 1, "approx": [],
                                "notes": [], "text": ""})
    page, errors = _open(browser, tmp_path / "mm.html", 1300, 900)
    assert "hl" in page.get_attribute(f"#L{line}", "class")
    sel = page.evaluate("(() => { const s = tcsimReport.data.slices[tcsimReport.view.sel]; return [s[5].warp, "
                        "s[5].first_line, s[5].last_line, tcsimReport.data.cats[s[4]]]; })()")
    assert sel[0] == 0 and sel[1] <= line <= sel[2] and sel[3] == "inst"
    assert errors == []
    page.close()
