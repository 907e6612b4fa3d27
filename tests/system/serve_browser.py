#!/usr/bin/python3
"""The web UI of `stackscope serve` in a real headless browser (Debian's chromium and
chromium-driver, python3-selenium), against a store holding two intervals: A, a recording of
wl_chain_nofp alone, and B, of wl_chain_nofp and wl_kernel (the "regression": syscall_loop).

  serve_browser.py URL ARTEFACT_DIR A_START A_END B_START B_END A_SAMPLES B_SAMPLES
  serve_browser.py --traces URL ARTEFACT_DIR TRACE_ID TRACE_SAMPLES ALL_SAMPLES LINK
      (the trace table and filter over a store with trace ids: test_thread_ctx.sh)
  serve_browser.py --services URL ARTEFACT_DIR SERVICE SERVICE_SAMPLES ALL_SAMPLES PID
      (the service filter and the process names over a store with a published service.name,
      SERVICE of process PID: test_process_ctx.sh)

Prints one line per check, "ok ..." or "FAIL ...", and exits 0 only when all passed.
Screenshots go to ARTEFACT_DIR (kept after the test).
"""
import json
import os
import re
import sys
import time
import urllib.request

for k in list(os.environ):
    if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        del os.environ[k]

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

failed = 0


def check(what, cond, detail=""):
    global failed
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else ": " + str(detail)))
    if not cond:
        failed += 1


def wait_for(fn, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.1)
    return fn()


def new_driver():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
              "--window-size=1400,1000", "--disable-dev-shm-usage"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def whole_store_page(url, total):
    """A browser on the page at url, once it shows the whole store (checked: total samples),
    and a function reading its status line. The caller quits the browser."""
    d = new_driver()
    d.set_page_load_timeout(20)
    d.get(url)
    status = lambda: d.find_element(By.ID, "status").text  # noqa: E731
    wait_for(lambda: status().endswith(" samples"))
    check("page loads: the whole store", status() == f"{total} samples", status())
    return d, status


def trace_checks(url, art, trace_id, trace_samples, total, link):
    """The trace filter and the trace table (tests/system/test_thread_ctx.sh): a store whose
    samples carry trace ids; the server given --trace-url, whose link for trace_id is `link`."""
    d, status = whole_store_page(url, total)
    try:
        row = lambda: [r for r in d.find_elements(By.CSS_SELECTOR, "#traces tbody tr")  # noqa: E731
                       if r.find_element(By.CSS_SELECTOR, "td.trace-id").text == trace_id]
        wait_for(row)
        check("trace table shown, a row for the trace", d.find_element(By.ID, "traces-box")
              .is_displayed() and len(row()) == 1, len(row()))
        if not row():
            return
        a = row()[0].find_elements(By.CSS_SELECTOR, "td.trace-id a")
        href = a[0].get_attribute("href") if a else ""
        check("the trace id links to the --trace-url viewer", href == link, href)
        check("  ... in a new tab, without opener or referrer",
              a and a[0].get_attribute("target") == "_blank" and
              a[0].get_attribute("rel") == "noopener noreferrer",
              a and a[0].get_attribute("rel"))
        n = int(row()[0].find_elements(By.CSS_SELECTOR, "td")[2].text)
        check("the row's samples are the trace's", n == trace_samples, (n, trace_samples))
        row()[0].find_element(By.TAG_NAME, "button").click()
        wait_for(lambda: status() == f"{trace_samples} samples")
        check("'only this': the graph of that trace", status() == f"{trace_samples} samples",
              status())
        check("  ... asked with trace=ID", d.execute_script(
            "return performance.getEntriesByType('resource').some(e => "
            "/api\\/flamegraph\\?.*trace=" + trace_id + "/.test(e.name))"))
        check("  ... and the trace box shows it",
              d.find_element(By.ID, "f-trace").get_attribute("value") == trace_id)
        d.save_screenshot(os.path.join(art, "trace_filter.png"))
        wait_for(lambda: row() and row()[0].find_element(By.TAG_NAME, "button").text ==
                 "all traces")
        row()[0].find_element(By.TAG_NAME, "button").click()
        wait_for(lambda: status() == f"{total} samples")
        check("'all traces': the whole store again", status() == f"{total} samples", status())
        box = d.find_element(By.ID, "f-trace")
        box.clear()
        box.send_keys(trace_id.upper() + Keys.ENTER)
        wait_for(lambda: status() == f"{trace_samples} samples")
        check("a trace id typed (upper case) + Enter: that trace",
              status() == f"{trace_samples} samples", status())
        box.clear()
        box.send_keys("12zz" + Keys.ENTER)
        wait_for(lambda: "32 hex" in status())
        check("a bad trace id: said, not asked", "32 hex" in status(), status())
    finally:
        d.quit()


def service_checks(url, art, service, service_samples, total, pid):
    """The service filter: the menu lists SERVICE with its samples, choosing it shows them alone;
    the process menu names PID after its service ("checkout (pid 4121)")."""
    d, status = whole_store_page(url, total)
    try:
        opts = lambda sel: [o for o in d.find_elements(By.CSS_SELECTOR, f"#{sel} option")]  # noqa: E731
        wait_for(lambda: len(opts("f-service")) > 1)
        svc = [o for o in opts("f-service") if o.get_attribute("value") == service]
        check("the service menu lists the service with its samples",
              len(svc) == 1 and svc[0].text == f"{service}: {service_samples}",
              [o.text for o in opts("f-service")])
        # (one entry per name the pid had: a sample taken before its exec, as the shell that
        # started it, is a second entry, named after the service all the same)
        procs = [o.text for o in opts("f-pid") if o.get_attribute("value") == str(pid)]
        check("the process menu names the process after its service",
              len(procs) >= 1 and all(p.startswith(f"{service} (pid {pid})") for p in procs), procs)
        if svc:
            Select(d.find_element(By.ID, "f-service")).select_by_value(service)
            wait_for(lambda: status() == f"{service_samples} samples")
            check("service chosen: its samples alone", status() == f"{service_samples} samples",
                  status())
            check("  ... asked with service=NAME", d.execute_script(
                "return performance.getEntriesByType('resource').some(e => "
                "/api\\/flamegraph\\?.*service=" + service + "/.test(e.name))"))
            d.save_screenshot(os.path.join(art, "service_filter.png"))
            Select(d.find_element(By.ID, "f-service")).select_by_value("")
            wait_for(lambda: status() == f"{total} samples")
            check("service 'all': the whole store again", status() == f"{total} samples",
                  status())
    finally:
        d.quit()


if sys.argv[1] == "--services":
    service_checks(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
                   int(sys.argv[7]))
    sys.exit(1 if failed else 0)

if sys.argv[1] == "--traces":
    trace_checks(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
                 sys.argv[7])
    sys.exit(1 if failed else 0)

url, art = sys.argv[1], sys.argv[2]
a_start, a_end, b_start, b_end, a_samples, b_samples = map(int, sys.argv[3:9])
d = new_driver()
try:
    d.set_page_load_timeout(20)
    t0 = time.time()
    d.get(url)
    status = lambda: d.find_element(By.ID, "status").text  # noqa: E731
    wait_for(lambda: status().endswith(" samples"))
    check("page loads and shows the whole store", status() == f"{a_samples + b_samples} samples",
          status())
    print(f"info page load to first flamegraph: {time.time() - t0:.2f} s")

    # every resource came from this server (nothing from a CDN or elsewhere)
    res = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    check("every resource from the server itself", res and all(r.startswith(url) for r in res),
          res)

    canvas = d.find_element(By.ID, "timeline")
    lo, hi = min(a_start, b_start), max(a_end, b_end)
    width = canvas.size["width"]

    def drag(t1, t2):
        x1 = (t1 - lo) / (hi - lo) * width
        x2 = (t2 - lo) / (hi - lo) * width
        (ActionChains(d).move_to_element_with_offset(canvas, int(x1 - width / 2), 0)
         .click_and_hold().move_by_offset(int(x2 - x1), 0).release().perform())

    def inside(s, e):  # a range well inside one interval
        return s + (e - s) // 10, e - (e - s) // 10

    # --- a range: interval A only ---
    drag(*inside(a_start, a_end))
    wait_for(lambda: status() == f"{a_samples} samples")
    check("range A selected by dragging on the timeline", status() == f"{a_samples} samples",
          status())
    rng = d.find_element(By.ID, "range").text
    check("the range says one interval and its samples", f"(1 intervals, {a_samples} samples)" in rng,
          rng)

    # --- search, then click the workload's leaf ---
    box = d.find_element(By.ID, "search")
    box.send_keys("hot_leaf")
    m = wait_for(lambda: re.search(r"match: (\d+) of (\d+) samples", d.find_element(By.ID, "match").text))
    share = int(m.group(1)) / int(m.group(2)) if m else 0
    check("search hot_leaf: a match share of at least 80%", m and int(m.group(2)) == a_samples and
          share >= 0.8, d.find_element(By.ID, "match").text)
    frames = d.find_elements(By.CSS_SELECTOR, ".frame.match[data-name='hot_leaf']")
    check("the matching frames are highlighted", len(frames) >= 1, len(frames))
    if frames:
        frames[0].click()
        detail = wait_for(lambda: d.find_element(By.ID, "detail").text.startswith("hot_leaf"))
        text = d.find_element(By.ID, "detail").text
        mm = re.match(r"hot_leaf \[native\]: (\d+) samples, ([\d.]+)% of all", text)
        check("clicked frame: hot_leaf, native, with its share", mm and float(mm.group(2)) >= 80,
              text)
        leaf = d.find_element(By.CSS_SELECTOR, ".frame[data-name='hot_leaf']")
        flame_w = d.find_element(By.ID, "flame").size["width"]
        check("zoomed: hot_leaf spans the graph", leaf.size["width"] >= 0.95 * flame_w - 2,
              (leaf.size["width"], flame_w))
        anc = d.find_elements(By.CSS_SELECTOR, ".frame.ancestor[data-name='chain_c']")
        check("zoomed: its callers stay above it (chain_c)", len(anc) == 1, len(anc))
    rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#top tbody tr")]
    check("top table: hot_leaf first", rows and rows[0].startswith("hot_leaf native"), rows[:2])
    d.save_screenshot(os.path.join(art, "range_zoom.png"))

    # --- the top table focuses the graph ---
    d.find_element(By.ID, "search").clear()
    d.find_element(By.CSS_SELECTOR, "#top tbody tr:nth-child(2) td.fn").click()
    name = d.find_element(By.CSS_SELECTOR, "#top tbody tr:nth-child(2) td.fn").text
    wait_for(lambda: d.find_element(By.ID, "detail").text.startswith(name))
    check("a top-table row focuses the graph on its function",
          d.find_element(By.ID, "detail").text.startswith(name + " ["),
          d.find_element(By.ID, "detail").text)

    # --- sandwich: chain_b's callers above it and callees below it, merged ---
    d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    wait_for(lambda: not d.find_elements(By.CSS_SELECTOR, "#flame .frame.ancestor"))
    mid = wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#flame .frame[data-name='chain_b']"))
    if mid:
        mid[0].click()
        wait_for(lambda: d.find_element(By.ID, "detail").text.startswith("chain_b ["))
        d.find_element(By.ID, "sandwich-open").click()
    title = wait_for(lambda: d.find_element(By.ID, "sw-title").text) if mid else ""
    check("sandwich of chain_b opens", d.find_element(By.ID, "sandwich-box").is_displayed() and
          title.startswith("sandwich: chain_b [native]"), title)

    def tree_frames(box):
        out = {}
        for f in d.find_elements(By.CSS_SELECTOR, f"#{box} .frame"):
            out.setdefault(f.get_attribute("data-name"), []).append(
                (int(f.get_attribute("data-depth")), f.location["y"], f.size["width"]))
        return out

    callers, callees = tree_frames("sw-callers"), tree_frames("sw-callees")
    box_w = d.find_element(By.ID, "sw-callers").size["width"]

    def one(tree, name, depth):
        got = tree.get(name, [])
        return len(got) == 1 and got[0][0] == depth

    check("sandwich callers: chain_b, then chain_a, then main, once each",
          one(callers, "chain_b", 0) and one(callers, "chain_a", 1) and one(callers, "main", 2),
          {k: callers[k] for k in ("chain_b", "chain_a", "main") if k in callers})
    check("sandwich callers are drawn above the function",
          one(callers, "chain_a", 1) and one(callers, "chain_b", 0) and
          callers["chain_a"][0][1] < callers["chain_b"][0][1], callers.get("chain_a"))
    check("sandwich callees: chain_b, then chain_c, then hot_leaf below it",
          one(callees, "chain_b", 0) and one(callees, "chain_c", 1) and
          callees["chain_c"][0][1] > callees["chain_b"][0][1] and
          any(x[0] == 2 for x in callees.get("hot_leaf", [])),
          {k: callees[k] for k in ("chain_b", "chain_c", "hot_leaf") if k in callees})
    check("sandwich: the function spans both trees",
          all(one(t, "chain_b", 0) and t["chain_b"][0][2] >= 0.95 * box_w - 2
              for t in (callers, callees)), (box_w, callers.get("chain_b"), callees.get("chain_b")))
    d.save_screenshot(os.path.join(art, "sandwich.png"))
    c_frames = d.find_elements(By.CSS_SELECTOR, "#sw-callees .frame[data-name='chain_c']")
    if c_frames:
        c_frames[0].click()
    title = wait_for(lambda: d.find_element(By.ID, "sw-title").text.startswith("sandwich: chain_c")
                     and d.find_element(By.ID, "sw-title").text)
    check("a frame of the sandwich makes it the sandwich's function", bool(title), title)
    d.find_element(By.ID, "sw-close").click()
    check("sandwich closes", not d.find_element(By.ID, "sandwich-box").is_displayed() and
          not d.find_elements(By.CSS_SELECTOR, "#sw-callers .frame"))

    # --- source with heat: hot_leaf's file from its DWARF lines, the hot loop marked ---
    def source_rows():
        return d.execute_script(
            "return [...document.querySelectorAll('#src-table tbody tr')].map(r => "
            "[Number(r.dataset.line), Number(r.dataset.self), Number(r.dataset.total), "
            "r.className, r.querySelector('td.code').textContent])")

    d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    leaf = wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#flame .frame[data-name='hot_leaf']"))
    if leaf:
        leaf[0].click()
        wait_for(lambda: d.find_element(By.ID, "detail").text.startswith("hot_leaf ["))
        d.find_element(By.ID, "source-open").click()
    rows = wait_for(lambda: source_rows()) if leaf else []
    title = d.find_element(By.ID, "src-title").text
    m = re.match(r"source of hot_leaf: (/\S+) in process \d+ \(wl_chain_nofp\)", title)
    check("source of hot_leaf opens from the clicked frame", d.find_element(By.ID, "source-box")
          .is_displayed() and m, title)
    path = m.group(1) if m else ""
    text = open(path).read().splitlines() if path and os.path.exists(path) else None
    check("the source view holds the file's lines, in order",
          text is not None and [r[4] for r in rows] == text and
          [r[0] for r in rows] == list(range(1, len(text) + 1)), (path, len(rows)))
    hottest = [r for r in rows if "hottest" in r[3].split()]
    check("one line marked hottest: hot_leaf's loop, with self samples",
          len(hottest) == 1 and re.search(r"wl_sink \+= i|for \(unsigned long i", hottest[0][4])
          and hottest[0][1] > 0, hottest)
    first = next((r[0] for r in rows if "void hot_leaf(" in r[4]), 0)
    last = next((r[0] for r in rows if r[0] > first and r[4].startswith("}")), 0)
    body_self = sum(r[1] for r in rows if first < r[0] < last)
    all_self = sum(r[1] for r in rows)
    check("hot_leaf's body holds the self samples (>= 80%), its lines marked hot",
          all_self and body_self >= 0.8 * all_self and
          all(first < r[0] < last for r in rows if "hot" in r[3].split()),
          (first, last, body_self, all_self))
    call = [r for r in rows if "hot_leaf(n);" in r[4]]
    check("chain_c's call line: total samples, no self", len(call) == 1 and call[0][2] > 0 and
          call[0][1] == 0, call)
    cell = d.find_elements(By.CSS_SELECTOR, "#src-table tr.hottest td.self")
    bg = cell[0].value_of_css_property("background-color") if cell else ""
    rgb = [int(x) for x in re.findall(r"\d+", bg)[:3]] or [0, 0, 0]
    check("the hottest line's heat cell is red", cell and rgb[0] > rgb[2] + 50, bg)
    visible = d.execute_script(
        "const r = document.querySelector('#src-table tr.hottest'), b = $('src-scroll');"
        "if (!r) return false; const x = r.getBoundingClientRect(), y = b.getBoundingClientRect();"
        "return x.top >= y.top && x.bottom <= y.bottom")
    check("the hottest line is scrolled into view", visible)
    d.save_screenshot(os.path.join(art, "source.png"))
    # from the sandwich: its function's source; from the top table: a double click
    mid = d.find_elements(By.CSS_SELECTOR, "#flame .frame[data-name='chain_b']")
    if mid:
        mid[0].click()
        wait_for(lambda: d.find_element(By.ID, "detail").text.startswith("chain_b ["))
        d.find_element(By.ID, "sandwich-open").click()
        wait_for(lambda: d.find_element(By.ID, "sw-title").text.startswith("sandwich: chain_b"))
        d.find_element(By.ID, "sw-source").click()
    title = wait_for(lambda: d.find_element(By.ID, "src-title").text.startswith(
        "source of chain_b: ") and source_rows() and d.find_element(By.ID, "src-title").text)
    check("the sandwich's source button: chain_b's file", bool(title) and path in title, title)
    d.find_element(By.ID, "sw-close").click()
    row = [r for r in d.find_elements(By.CSS_SELECTOR, "#top tbody tr td.fn") if r.text == "chain_c"]
    if row:
        ActionChains(d).double_click(row[0]).perform()
    title = wait_for(lambda: d.find_element(By.ID, "src-title").text.startswith(
        "source of chain_c: ") and d.find_element(By.ID, "src-title").text)
    check("a double click in the top table: chain_c's source", bool(title), title)
    d.find_element(By.ID, "src-close").click()
    check("the source view closes", not d.find_element(By.ID, "source-box").is_displayed())
    d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)

    # --- the runtime fold toggle: asks for fold=runtime; no runtime here, the same samples ---
    d.find_element(By.ID, "fold-runtime").click()
    asked = wait_for(lambda: d.execute_script(
        "return performance.getEntriesByType('resource').some(e => /fold=runtime/.test(e.name))"))
    wait_for(lambda: status() == f"{a_samples} samples")
    check("fold toggle: the graph asked with fold=runtime, same samples",
          asked and status() == f"{a_samples} samples", (asked, status()))
    d.find_element(By.ID, "fold-runtime").click()
    wait_for(lambda: status() == f"{a_samples} samples")

    # --- diff: A before, B after: syscall_loop is new in B ---
    d.find_element(By.ID, "diff-mode").click()
    drag(*inside(a_start, a_end))
    d.find_element(By.CSS_SELECTOR, "input[name=side][value='1']").click()
    drag(*inside(b_start, b_end))
    want = f"A {a_samples} samples, B {b_samples} samples"
    wait_for(lambda: status() == want)
    check("diff of ranges A and B loaded", status() == want, status())
    reg = d.find_elements(By.CSS_SELECTOR, ".frame[data-name='syscall_loop']")
    delta = float(reg[0].get_attribute("data-delta")) if reg else 0
    bg = reg[0].value_of_css_property("background-color") if reg else ""
    rgb = [int(x) for x in re.findall(r"\d+", bg)[:3]] or [0, 0, 0]
    check("diff: syscall_loop grew from A to B, drawn red", reg and delta > 0.2 and rgb[0] > rgb[2] + 50,
          (delta, bg))
    hot = d.find_elements(By.CSS_SELECTOR, ".frame[data-name='hot_leaf']")
    hd = float(hot[0].get_attribute("data-delta")) if hot else 0
    bg = hot[0].value_of_css_property("background-color") if hot else ""
    rgb = [int(x) for x in re.findall(r"\d+", bg)[:3]] or [0, 0, 0]
    check("diff: hot_leaf's share shrank, drawn blue", hot and hd < 0 and rgb[2] > rgb[0] + 50,
          (hd, bg))
    cells = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#top tbody tr")
             if r.text.startswith("syscall_loop") and r.find_elements(By.CSS_SELECTOR, "td.grew")]
    check("diff table: syscall_loop marked as grown", len(cells) == 1, cells)
    d.save_screenshot(os.path.join(art, "diff.png"))
finally:
    d.quit()
sys.exit(1 if failed else 0)
