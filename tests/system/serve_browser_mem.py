#!/usr/bin/python3
"""The web UI's sample-type menu in a real headless browser (Debian's chromium and
chromium-driver, python3-selenium), against the store of `agent --alloc --faults` while
tests/data/wl_alloc.c holds its leak (tests/system/test_agent_mem.sh):

  serve_browser_mem.py URL ARTEFACT_DIR PID

Checks that the menu lists cpu and the memory types the store has, and that picking
inuse_space for process PID (the process menu) renders the leak's chain (main;leak_blocks;[alloc: malloc]) and not the freed
alloc_hot. Prints one line per check, "ok ..." or "FAIL ...", and exits 0 only when all
passed; a screenshot goes to ARTEFACT_DIR. The same browser set-up as serve_browser.py.
"""
import os
import sys
import time

for k in list(os.environ):
    if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        del os.environ[k]

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402

url, art, pid = sys.argv[1], sys.argv[2], sys.argv[3]
failed = 0
WANT = ["cpu", "faults", "fault_bytes", "mapped_bytes", "alloc_objects", "alloc_space",
        "inuse_objects", "inuse_space"]


def check(what, cond, detail=""):
    global failed
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else ": " + str(detail)))
    if not cond:
        failed += 1


def pick(menu_id, value, tries=20):
    """Selects value in the menu menu_id; the page rebuilds its menus when the filters
    arrive (after each range or process change), which can take the element from under a
    click: picked again on a fresh element until it holds."""
    for _ in range(tries):
        try:
            Select(d.find_element(By.ID, menu_id)).select_by_value(value)
            if d.find_element(By.ID, menu_id).get_attribute("value") == value:
                return True
        except StaleElementReferenceException:
            pass
        time.sleep(0.25)
    return False


def wait_for(fn, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.1)
    try:
        return fn()
    except Exception:
        return None


opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
          "--window-size=1400,1000", "--disable-dev-shm-usage"):
    opts.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
try:
    d.set_page_load_timeout(20)
    d.get(url)
    status = lambda: d.find_element(By.ID, "status").text  # noqa: E731
    wait_for(lambda: status().endswith(" samples"))
    values = lambda: [o.get_attribute("value") or "cpu"  # noqa: E731
                      for o in Select(d.find_element(By.ID, "f-sample")).options]
    wait_for(lambda: all(t in values() for t in WANT))
    got = values()
    check("the sample-type menu lists " + ", ".join(WANT), all(t in got for t in WANT), got)
    check("cpu is the default", Select(d.find_element(By.ID, "f-sample"))
          .first_selected_option.get_attribute("value") == "", got)
    procs = lambda: [o.get_attribute("value")  # noqa: E731
                     for o in Select(d.find_element(By.ID, "f-pid")).options]
    wait_for(lambda: pid in procs())
    check("the process menu lists the workload", pid in procs(), procs()[:10])
    if "inuse_space" in got and pid in procs():
        pick("f-pid", pid)
        wait_for(lambda: status().endswith(" samples"))
        check("inuse_space picked in the sample-type menu", pick("f-sample", "inuse_space"))
        leak = wait_for(lambda: d.find_elements(By.CSS_SELECTOR,
                                                ".frame[data-name='leak_blocks']"))
        check("inuse_space: the leak's frame leak_blocks is drawn", bool(leak),
              "status: %s, the menu's value: %r, the page's last query: %s, frames drawn: %s" % (
                  status(), d.find_element(By.ID, "f-sample").get_attribute("value"),
                  d.execute_script("return filterParams(false).toString()"),
                  d.execute_script("return [...document.querySelectorAll('#flame .frame')]"
                                   ".slice(0, 12).map((e) => e.dataset.name).join(';')")))
        if leak:
            anc = d.find_elements(By.CSS_SELECTOR, ".frame[data-name='main']")
            leaf = d.find_elements(By.CSS_SELECTOR, ".frame[data-name='[alloc: malloc]']")
            check("inuse_space: with main above it and [alloc: malloc] below",
                  bool(anc) and bool(leaf), (len(anc), len(leaf)))
        hot = d.find_elements(By.CSS_SELECTOR, ".frame[data-name='take_hot']")
        check("inuse_space: nothing of take_hot (every allocation there freed)", not hot, len(hot))
        d.save_screenshot(os.path.join(art, "inuse_space.png"))
finally:
    d.quit()
sys.exit(1 if failed else 0)
