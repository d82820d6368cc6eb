"""The built user-guide website in headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium): the index and three guide pages load
with their pictures, a navigation link leads to its page, and the search
finds "adstack". Screenshots go to $QD_DOCS_SCREENSHOTS (default: a folder
under the site).

Run by tools/run_tests.py after tools/build_docs.py, with QD_DOCS_SITE set
to the built site:
    QD_DOCS_SITE=docs/_build/html python3 -m pytest tests/docs/test_site.py
"""
import functools
import http.server
import os
import threading

import pytest

SITE = os.environ.get("QD_DOCS_SITE", "")
SHOTS = os.environ.get("QD_DOCS_SCREENSHOTS") or os.path.join(SITE or ".", "_screenshots")
CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"

pytestmark = pytest.mark.skipif(not SITE, reason="QD_DOCS_SITE is not set: no built site "
                                "to open (tools/run_tests.py builds one and sets it)")


@pytest.fixture(scope="module")
def server():
    """The site over HTTP on a free local port (the search loads its index
    with a script, as it would from a web server)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=SITE)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver  # pylint: disable=import-outside-toplevel
    from selenium.webdriver.chrome.service import Service  # pylint: disable=import-outside-toplevel
    for path in (CHROMIUM, DRIVER):
        assert os.path.exists(path), f"{path} is missing: ./qd setup installs chromium and " \
                                     f"chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    os.makedirs(SHOTS, exist_ok=True)
    yield driver
    driver.quit()


def _wait(browser, condition, seconds=30):
    from selenium.webdriver.support.ui import WebDriverWait  # pylint: disable=import-outside-toplevel
    return WebDriverWait(browser, seconds).until(condition)


def _h1(browser):
    from selenium.webdriver.common.by import By  # pylint: disable=import-outside-toplevel
    return browser.find_element(By.TAG_NAME, "h1").text.strip("¶ \n")


def _images_loaded(browser):
    """(src, loaded) of every picture in the page's body."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('div[role=main] img'))"
        ".map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0]);")


def test_index_loads_with_the_guide_in_its_navigation(server, browser):
    from selenium.webdriver.common.by import By  # pylint: disable=import-outside-toplevel
    browser.get(server + "/index.html")
    assert "Quadrants" in browser.title
    assert _h1(browser) == "Quadrants"
    nav = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "nav a.reference.internal")]
    for chapter in ("Getting started", "Autodiff", "The adstack", "Backends",
                    "Troubleshooting", "API reference"):
        assert chapter in nav, nav
    browser.save_screenshot(os.path.join(SHOTS, "index.png"))


@pytest.mark.parametrize("page, title", [
    ("user_guide/getting_started.html", "Getting started"),
    ("user_guide/adstack.html", "The adstack"),
    ("user_guide/performance.html", "Performance"),
])
def test_guide_pages_load_with_their_pictures(server, browser, page, title):
    browser.get(f"{server}/{page}")
    assert _h1(browser) == title
    images = _images_loaded(browser)
    assert images, f"{page} shows no picture"
    assert all(ok for _, ok in images), images
    browser.save_screenshot(os.path.join(SHOTS, page.split("/")[-1].replace(".html", ".png")))


def test_a_navigation_link_leads_to_its_page(server, browser):
    from selenium.webdriver.common.by import By  # pylint: disable=import-outside-toplevel
    browser.get(server + "/user_guide/getting_started.html")
    link = browser.find_element(By.LINK_TEXT, "Sparse layouts")
    link.click()
    _wait(browser, lambda b: b.current_url.endswith("user_guide/sparse.html"))
    assert _h1(browser) == "Sparse layouts"
    browser.save_screenshot(os.path.join(SHOTS, "navigation.png"))


def test_search_finds_adstack(server, browser):
    from selenium.webdriver.common.by import By  # pylint: disable=import-outside-toplevel
    from selenium.webdriver.common.keys import Keys  # pylint: disable=import-outside-toplevel
    browser.get(server + "/index.html")
    box = browser.find_element(By.CSS_SELECTOR, "input[name=q]")
    box.send_keys("adstack", Keys.RETURN)
    _wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "ul.search li")) > 0)
    results = [a.get_attribute("href")
               for a in browser.find_elements(By.CSS_SELECTOR, "ul.search li a")]
    assert any(r.split("#")[0].split("?")[0].endswith("user_guide/adstack.html")
               for r in results), results
    browser.save_screenshot(os.path.join(SHOTS, "search.png"))
