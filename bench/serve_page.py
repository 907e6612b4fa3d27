#!/usr/bin/python3
"""bench/serve.sh's page timer: headless Chromium (Debian's chromium, chromium-driver,
python3-selenium) loads the UI at URL until its flamegraph is drawn (the status line says
"N samples"), and the peer, the SVG flamegraph at SVG_URL, until the document is complete;
N times each, alternating. Prints the medians in seconds.
Usage: serve_page.py URL SVG_URL N
"""
import statistics
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

url, svg_url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
          "--window-size=1400,1000", "--disable-dev-shm-usage"):
    opts.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
d.set_page_load_timeout(120)
ui, svg = [], []
try:
    for _ in range(n):
        d.get("about:blank")
        t0 = time.time()
        d.get(url)
        while not d.find_element(By.ID, "status").text.endswith(" samples"):
            if time.time() - t0 > 120:
                raise SystemExit("the page never finished: " + d.find_element(By.ID, "status").text)
            time.sleep(0.02)
        ui.append(time.time() - t0)
        frames = len(d.find_elements(By.CSS_SELECTOR, ".frame"))
        d.get("about:blank")
        t0 = time.time()
        d.get(svg_url)  # returns once the document is complete
        svg.append(time.time() - t0)
finally:
    d.quit()
print("%-52s %10.3f   (%d frames drawn)" % ("page: the UI, navigation to the day's flamegraph",
                                            statistics.median(ui), frames))
print("%-52s %10.3f" % ("peer page: the SVG flamegraph of the day opened", statistics.median(svg)))
