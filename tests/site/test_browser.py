"""The built site as readers get it, in a real browser (Chromium through Playwright).

The site is built once (the session's ``built_site``), served on 127.0.0.1 under
the path of ``site_url`` as GitHub Pages serves it (``404.html`` for a missing
page), and every page of the nav is opened in the light and the dark theme. Each
visit records every request, console message and page error, runs axe-core, and
writes a screenshot (desktop and a 390 px phone); the tests then assert on those
records, so each page is loaded once per theme however many checks it has.

Environment:

* ``OPBYOP_CHROMIUM``: the browser to drive, ``/usr/bin/chromium`` by default
  (Debian's package). Empty or ``bundled``: Playwright's own download, for
  hosted CI where ``python -m playwright install chromium`` works.
* ``OPBYOP_REQUIRE_BROWSER=1``: a missing browser fails instead of skipping
  (``.ci/run`` and the GitHub workflow set it).
* ``OPBYOP_SCREENSHOTS``: where screenshots go, ``screenshots/`` by default.
* ``OPBYOP_FULL_SCREENSHOTS=1``: screenshots of whole pages, top to bottom.
  By default each is the first screen only: a whole long page takes seconds
  to capture, four times per page, and no test reads the pictures.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import gzip
import http.server
import os
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml  # type: ignore[import-untyped]
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError
from site_build import ROOT

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("OPBYOP_CHROMIUM", "/usr/bin/chromium")
BUNDLED = CHROMIUM.strip() in ("", "bundled")
REQUIRE_BROWSER = os.environ.get("OPBYOP_REQUIRE_BROWSER") == "1"
# Headless, and none of Chromium's own traffic (updates, sync, field trials):
# without these it calls Google, which these machines refuse.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(os.environ.get("OPBYOP_SCREENSHOTS", ROOT / "screenshots"))
FULL_SCREENSHOTS = os.environ.get("OPBYOP_FULL_SCREENSHOTS") == "1"
THEMES = {"light": "default", "dark": "slate"}  # color scheme -> Material's scheme
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
FIRST_EPISODE = "episodes/01-attention-is-four-operations/"

MAX_EPISODE_BYTES = 500_000  # gzipped: 0.38 MB with episodes 1-10
SERIOUS = ("critical", "serious")

# LaTeX a reader should never see: \( \[ delimiters, common commands, $...$.
RAW_LATEX = re.compile(
    r"\\[(\[\])]|\\(?:frac|sqrt|sum|text|cdot|top|mathrm|operatorname|left|right)\b"
    r"|\$\$|\$[^$\s][^$\n]*\$"
)
SOURCE_MATH = re.compile(r"\$[^$\n]+\$|\\\(|\\\[")


# ---------------------------------------------------------------- the nav


def _load_config() -> dict[str, Any]:
    class Loader(yaml.SafeLoader):
        """mkdocs.yml with its !relative and !ENV tags read as plain values."""

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    with (ROOT / "mkdocs.yml").open(encoding="utf-8") as stream:
        config: dict[str, Any] = yaml.load(stream, Loader=Loader)
    return config


def _nav_sources(entries: list[Any]) -> Iterator[str]:
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            yield from _nav_sources(value)
        elif not re.match(r"[a-z]+://", value):
            yield value


def page_url(source: str) -> str:
    """The URL path (relative to the site root) MkDocs gives a docs source file."""
    path = PurePosixPath(source).with_suffix("")
    if path.name in ("index", "README"):
        return "" if str(path.parent) == "." else f"{path.parent}/"
    return f"{path}/"


CONFIG = _load_config()
NAV = {page_url(source): source for source in _nav_sources(CONFIG["nav"])}
SITE_PATH = urlsplit(CONFIG["site_url"]).path.rstrip("/") + "/"  # "/opbyop/"
NOTEBOOK_PAGES = [url for url, source in NAV.items() if source.startswith("notebooks/")]


def page_id(url: str) -> str:
    return url.strip("/").replace("/", "-") or "home"


# ---------------------------------------------------------------- the server


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """The built site under SITE_PATH, and 404.html with status 404 for anything missing."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def translate_path(self, path: str) -> str:
        request = unquote(urlsplit(path).path)
        if not request.startswith(SITE_PATH):
            return str(Path(self.directory) / "missing" / "missing")
        return super().translate_path("/" + request.removeprefix(SITE_PATH))

    def send_head(self) -> Any:
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        if path.is_file() or path.is_dir():
            return super().send_head()
        body = (Path(self.directory) / "404.html").read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return None


@pytest.fixture(scope="session")
def base_url(built_site: Path) -> Iterator[str]:
    """The built site served on 127.0.0.1 (free port) under the path of ``site_url``."""
    handler = functools.partial(SiteHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}{SITE_PATH}"
    server.shutdown()
    server.server_close()
    thread.join()


# ---------------------------------------------------------------- the browser


def _no_browser(reason: str) -> None:
    message = (
        f"{reason}. The browser tests need Chromium: install it (Debian/Ubuntu: "
        "apt-get install chromium) or point OPBYOP_CHROMIUM at one "
        "(OPBYOP_CHROMIUM=bundled uses Playwright's download)."
    )
    if REQUIRE_BROWSER:
        pytest.fail(f"OPBYOP_REQUIRE_BROWSER=1 and {message}", pytrace=False)
    pytest.skip(f"browser tests skipped: {message}")


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """One Chromium for the whole session, or a skip (a failure in CI) without one."""
    if not BUNDLED and not Path(CHROMIUM).is_file():
        _no_browser(f"no Chromium at {CHROMIUM}")
    try:
        if BUNDLED:
            launched = playwright.chromium.launch(args=CHROMIUM_FLAGS)
        else:
            launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
    except PlaywrightError as error:
        _no_browser(f"Chromium at {CHROMIUM or 'bundled'} did not start ({error.message})")
    yield launched
    launched.close()


# ---------------------------------------------------------------- the report


class Report:
    """Lines printed in pytest's terminal summary: page weights, screenshots, notes."""

    def __init__(self) -> None:
        self.sections: dict[str, list[str]] = {}

    def add(self, section: str, line: str) -> None:
        self.sections.setdefault(section, []).append(line)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for section, lines in self.sections.items():
            terminalreporter.write_sep("-", section)
            for line in sorted(set(lines)):
                terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def report(pytestconfig: pytest.Config) -> Report:
    plugin = Report()
    pytestconfig.pluginmanager.register(plugin, "opbyop-browser-report")
    return plugin


@pytest.fixture(scope="session")
def screenshots(report: Report) -> Path:
    """A fresh screenshot folder, named in the test output."""
    if SCREENSHOTS.is_dir():
        for old in SCREENSHOTS.glob("*.png"):
            old.unlink()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    report.add("screenshots", f"light and dark, desktop and phone: {SCREENSHOTS}")
    return SCREENSHOTS


# ---------------------------------------------------------------- visits


@dataclass
class Visit:
    """What one page did when opened in one theme."""

    url: str
    theme: str
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    transfer_bytes: int = 0
    gzipped_bytes: int = 0  # as GitHub Pages sends it
    scheme: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    violations: list[dict[str, Any]] = field(default_factory=list)
    copies: list[tuple[str, str]] = field(default_factory=list)  # (clipboard, block text)
    scrolling_code: list[str] = field(default_factory=list)  # blocks wider than their box
    phone_overflow: int = 0

    def offsite(self, origin: str) -> list[str]:
        local = ("data:", "blob:", "about:", origin)
        return [url for url in self.requests if not url.startswith(local)]


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


def new_context(browser: Browser, base_url: str, theme: str, viewport: dict[str, int]) -> Any:
    """A fresh context (cold cache, empty storage) that cannot reach past 127.0.0.1."""
    context = browser.new_context(
        color_scheme="dark" if theme == "dark" else "light",
        viewport=viewport,  # type: ignore[arg-type]
        device_scale_factor=1,
        is_mobile=viewport == PHONE,
        has_touch=viewport == PHONE,
        service_workers="block",
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin_of(base_url))
    origin = origin_of(base_url)
    context.route(lambda url: not url.startswith(origin), lambda route: route.abort())
    return context


def settled_scheme(page: Page, theme: str) -> str | None:
    """The page's colour scheme once Material's script has applied it.

    Material's bundle sets the scheme for the system theme after the page loads;
    on a heavy page, on a busy machine, that can come after "networkidle". Wait
    up to five seconds for the expected scheme, then read whatever is there.
    """
    # On a timeout, the assertion that reads the result says what was there.
    with contextlib.suppress(PlaywrightError):
        page.wait_for_function(
            "scheme => document.body.getAttribute('data-md-color-scheme') === scheme",
            arg=THEMES[theme],
            timeout=5_000,
        )
    return page.get_attribute("body", "data-md-color-scheme")


def gzipped_bytes(urls: list[str], base_url: str, built_site: Path) -> int:
    """What this site's files among ``urls`` weigh gzipped, as GitHub Pages sends them.

    The local server sends them uncompressed. Most of a first visit is the
    search index, which grows with every page: gzip shrinks it about fivefold.
    """
    total = 0
    for url in dict.fromkeys(urls):
        if not url.startswith(base_url):
            continue
        path = built_site / unquote(urlsplit(url).path).removeprefix(SITE_PATH)
        if path.is_dir():
            path /= "index.html"
        if path.is_file():
            total += len(gzip.compress(path.read_bytes()))
    return total


def record(page: Page, visit: Visit) -> None:
    page.on("request", lambda request: visit.requests.append(request.url))
    page.on(
        "requestfailed",
        lambda request: visit.failed.append(f"{request.url} ({request.failure})"),
    )
    page.on(
        "response",
        lambda response: (
            visit.failed.append(f"{response.url} (HTTP {response.status})")
            if response.status >= 400
            else None
        ),
    )
    page.on(
        "console",
        lambda message: (
            visit.console_errors.append(message.text) if message.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: visit.console_errors.append(f"page error: {error}"))


# Everything the checks need from the page, in one round trip.
PAGE_FACTS = """async () => {
  const article = document.querySelector("article") || document.body;
  const skip = "pre, code, math, script, style, kbd, samp, textarea, .jp-InputArea";
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const prose = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement.closest(skip)) prose.push(node.textContent);
  }
  const images = [...document.querySelectorAll("img")];
  await Promise.all(images.map((img) => {
    img.loading = "eager";
    return img.decode().catch(() => null);
  }));
  const background = (element) => {
    for (let e = element; e; e = e.parentElement) {
      const [r, g, b, a] = (getComputedStyle(e).backgroundColor.match(/[\\d.]+/g) || [])
        .map(Number);
      if (a === undefined || a > 0.5) return [r, g, b];
    }
    return [255, 255, 255];
  };
  const luminance = ([r, g, b]) => {
    const c = [r, g, b].map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  // What a figure shows around its content: its border pixels laid over what is
  // behind the <img> (its own background, its card, or the page).
  const figureBackground = (img) => {
    const canvas = document.createElement("canvas");
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const context = canvas.getContext("2d");
    context.drawImage(img, 0, 0);
    const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
    const behind = background(img);
    let sum = 0, count = 0;
    const add = (x, y) => {
      const i = 4 * (y * canvas.width + x), a = data[i + 3] / 255;
      sum += luminance([0, 1, 2].map((k) => a * data[i + k] + (1 - a) * behind[k]));
      count += 1;
    };
    for (let x = 0; x < canvas.width; x++) { add(x, 0); add(x, canvas.height - 1); }
    for (let y = 0; y < canvas.height; y++) { add(0, y); add(canvas.width - 1, y); }
    return count ? sum / count : 0;
  };
  const figure = (img) => img.closest(".jp-OutputArea, figure") !== null
    || img.src.startsWith("data:");
  return {
    prose: prose.join(" "),
    math: [...article.querySelectorAll("math")].map((m) => m.getBoundingClientRect().width),
    mathErrors: article.querySelectorAll("merror").length,
    images: images.map((img) => ({
      src: img.src.slice(0, 60),
      loaded: img.complete && img.naturalWidth > 0,
      alt: (img.getAttribute("alt") || "").trim(),
      figure: figure(img),
      background: img.complete && img.naturalWidth > 0 && figure(img)
        ? figureBackground(img) : null,
    })),
    repo: [...document.querySelectorAll("a.md-source")].map((a) => ({
      href: a.href, component: a.getAttribute("data-md-component"),
    })),
    edit: [...document.querySelectorAll("a[rel=edit]")].map((a) => a.href),
    outputs: [...article.querySelectorAll("pre.opbyop-output")].map((pre) => ({
      text: pre.textContent,
      copyButton: pre.querySelector("button") !== null,
    })),
    title: document.title,
    h1: (document.querySelector("article h1") || {}).textContent || "",
    styled: getComputedStyle(document.querySelector(".md-header") || document.body)
      .position !== "static",
  };
}"""

# Show a code block wherever it sits (closed <details>, an inactive tab).
# Open the <details> and select the tab a copy button sits in, scroll it into
# view, empty the clipboard, and return the text of the block it copies: one
# round trip to the browser per block, then the click, then the read.
REVEAL = """async (button) => {
  for (let e = button; e; e = e.parentElement) {
    if (e.tagName === "DETAILS") e.open = true;
    if (e.classList.contains("tabbed-block")) {
      const blocks = [...e.parentElement.children];
      const set = e.closest(".tabbed-set");
      set.querySelectorAll(":scope > input")[blocks.indexOf(e)].checked = true;
    }
  }
  button.scrollIntoView({ block: "center" });
  await navigator.clipboard.writeText("");
  const target = button.getAttribute("data-clipboard-target") || "";
  return document.querySelector(target).textContent;
}"""


# Copy buttons work only shortly after a real click (Chromium's "transient
# user activation" lasts about 5 s), and a click from Python costs about
# 0.25 s a block. So one real mouse click, then the page's own script clicks
# the buttons after it and reads each copy (one round trip), until one copies
# nothing: that block gets the next real click, and so on. A copy reaches the
# clipboard a moment after the click, so each read waits a little for it.
COPY_FROM = """async (start) => {
  const reveal = REVEAL;
  const buttons = document.querySelectorAll("button.md-code__button[data-md-type=copy]");
  const copies = [];
  for (let index = start; index < buttons.length; index++) {
    const expected = await reveal(buttons[index]);
    buttons[index].click();
    let copied = "";
    for (let wait = 0; wait < 30 && copied === ""; wait++) {
      copied = await navigator.clipboard.readText();
      if (copied === "") await new Promise((done) => setTimeout(done, 10));
    }
    if (copied === "") break;  // the activation has run out
    copies.push([copied, expected.replace(/\\n$/, "")]);
  }
  return copies;
}""".replace("REVEAL", REVEAL)


def copy_every_block(page: Page) -> list[tuple[str, str]]:
    """Each code block's copy button clicked; (clipboard, the block's text) per block.

    A block gets a real mouse click (it must be visible and on top) when the
    page's script cannot click it: the first, and any after the activation
    that a real click gives has run out.
    """
    buttons = page.locator("button.md-code__button[data-md-type=copy]")
    copies: list[tuple[str, str]] = []
    while len(copies) < buttons.count():
        button = buttons.nth(len(copies))
        expected = button.evaluate(REVEAL)
        button.click()
        copies.append(
            (page.evaluate("navigator.clipboard.readText()"), expected.removesuffix("\n"))
        )
        copies += [tuple(pair) for pair in page.evaluate(COPY_FROM, len(copies))]
    return copies


# Every code block, shown (closed <details> opened, each tab in turn), whose
# content is wider than its box: it would need a horizontal scrollbar.
SCROLLING_CODE = """() => {
  const article = document.querySelector("article") || document.body;
  for (const details of article.querySelectorAll("details")) details.open = true;
  const wide = new Map();
  const measure = () => {
    const blocks = article.querySelectorAll(
      "pre, pre > code, .highlight-ipynb, .jp-OutputArea-output");
    for (const e of blocks) {
      if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1) {
        const text = e.textContent.trim().split("\\n")[0].slice(0, 60);
        wide.set(e, `${e.scrollWidth - e.clientWidth}px too wide: ${text}`);
      }
    }
  };
  measure();
  for (const input of article.querySelectorAll(".tabbed-set > input")) {
    input.checked = true;
    measure();
  }
  return [...wide.values()];
}"""

# Pages whose code blocks are still too wide, each with the work that narrows
# it (tests/docs/test_fences.py has the same list). strict: once it fits, the
# entry must go.
NOT_YET_NARROW: dict[str, str] = {}


# axe-core's colour-contrast rule is most of its time (about 6 of 8 s on a long
# episode), and most of that goes to the highlighted code, whose colours are
# the theme's and the same on every page. So every page is checked with every
# rule outside code, and the code's colours once per theme and kind of page
# (test_code_colours_have_enough_contrast). A theme changes colours only (the
# page's HTML is the same), so the dark theme is checked with the rules about
# colour alone; the light theme with every rule.
CODE = [["pre"], [".jp-InputArea"]]
ONLY_VIOLATIONS = {"resultTypes": ["violations"]}  # axe skips the rest: faster
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
NOT_COLOUR_RULES = {rule: {"enabled": False} for rule in COLOUR_RULES}


def accessibility_violations(page: Page, theme: str) -> list[dict[str, Any]]:
    """axe-core's violations outside code: in light every rule, in dark the colour rules."""
    colours = Axe().run(
        page, context={"exclude": CODE}, options={**ONLY_VIOLATIONS, "runOnly": COLOUR_RULES}
    )
    if theme != "light":
        return colours.response["violations"]
    others = Axe().run(page, options={**ONLY_VIOLATIONS, "rules": NOT_COLOUR_RULES})
    return [*others.response["violations"], *colours.response["violations"]]


def code_contrast_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's colour-contrast violations inside code blocks only."""
    result = Axe().run(
        page,
        context={"include": CODE},
        options={**ONLY_VIOLATIONS, "runOnly": ["color-contrast"]},
    )
    return result.response["violations"]


VisitFn = Callable[[str, str], Visit]


@pytest.fixture(scope="session")
def visit(
    browser: Browser, base_url: str, built_site: Path, screenshots: Path, report: Report
) -> Iterator[VisitFn]:
    """Open a nav page in a theme once, record everything, and reuse the record."""
    visits: dict[tuple[str, str], Visit] = {}
    phones: dict[str, BrowserContext] = {}

    def open_page(url: str, theme: str) -> Visit:
        if (url, theme) in visits:
            return visits[(url, theme)]
        result = Visit(url, theme)
        context = new_context(browser, base_url, theme, DESKTOP)
        try:
            page = context.new_page()
            record(page, result)
            sizes: list[int] = []
            page.on(
                "requestfinished",
                lambda request: sizes.append(
                    sum(request.sizes()[key] for key in ("responseBodySize", "responseHeadersSize"))
                ),
            )
            page.goto(base_url + url, wait_until="networkidle")
            result.scheme = settled_scheme(page, theme)
            result.facts = page.evaluate(PAGE_FACTS)
            result.violations = accessibility_violations(page, theme)
            page.screenshot(
                path=screenshots / f"{page_id(url)}-{theme}-desktop.png",
                full_page=FULL_SCREENSHOTS,
            )
            if theme == "light":
                result.copies = copy_every_block(page)
                result.scrolling_code = page.evaluate(SCROLLING_CODE)
            result.transfer_bytes = sum(sizes)
            result.gzipped_bytes = gzipped_bytes(result.requests, base_url, built_site)
        finally:
            context.close()
        if theme not in phones:
            phones[theme] = new_context(browser, base_url, theme, PHONE)
        phone = phones[theme].new_page()
        phone.goto(base_url + url, wait_until="load")
        result.phone_overflow = phone.evaluate(
            "document.scrollingElement.scrollWidth - window.innerWidth"
        )
        phone.screenshot(
            path=screenshots / f"{page_id(url)}-{theme}-phone.png", full_page=FULL_SCREENSHOTS
        )
        phone.close()
        for violation in result.violations:
            if violation["impact"] not in SERIOUS:
                report.add(
                    "axe: moderate and minor findings (not failures)",
                    f"{violation['impact']} {violation['id']} on /{url} ({theme})",
                )
        visits[(url, theme)] = result
        return result

    yield open_page
    for context in phones.values():
        context.close()


PAGES = [pytest.param(url, id=page_id(url)) for url in NAV]
PAGES_THEMES = [
    pytest.param(url, theme, id=f"{page_id(url)}-{theme}") for url in NAV for theme in THEMES
]


# ---------------------------------------------------------------- the tests


def test_sitemap_lists_exactly_the_nav(built_site: Path) -> None:
    """The nav the tests walk is every page the site has."""
    sitemap = (built_site / "sitemap.xml").read_text(encoding="utf-8")
    urls = {
        loc.removeprefix(CONFIG["site_url"]) for loc in re.findall(r"<loc>(.*?)</loc>", sitemap)
    }
    assert urls == set(NAV), "pages built but not in the nav, or the other way round"


@pytest.mark.parametrize(("url", "theme"), PAGES_THEMES)
def test_page_loads_cleanly(visit: VisitFn, base_url: str, url: str, theme: str) -> None:
    page = visit(url, theme)
    assert not page.failed, f"failed requests: {page.failed}"
    assert not page.console_errors, f"console errors: {page.console_errors}"
    offsite = page.offsite(origin_of(base_url))
    assert not offsite, f"requests that left 127.0.0.1: {offsite}"
    assert page.facts["styled"], "the theme's stylesheet did not apply"


@pytest.mark.parametrize(("url", "theme"), PAGES_THEMES)
def test_page_renders_in_the_theme(visit: VisitFn, url: str, theme: str) -> None:
    assert visit(url, theme).scheme == THEMES[theme]


@pytest.mark.parametrize(("url", "theme"), PAGES_THEMES)
def test_no_serious_accessibility_violation(visit: VisitFn, url: str, theme: str) -> None:
    serious = [
        f"{v['impact']} {v['id']}: {v['help']} at {[n['target'] for n in v['nodes']][:5]}"
        for v in visit(url, theme).violations
        if v["impact"] in SERIOUS
    ]
    assert not serious, "axe-core:\n" + "\n".join(serious)


# One episode and one notebook: Material's code colours and the notebooks' own.
CODE_PAGES = [FIRST_EPISODE, *NOTEBOOK_PAGES[:1]]


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("url", CODE_PAGES)
def test_code_colours_have_enough_contrast(
    browser: Browser, base_url: str, url: str, theme: str
) -> None:
    context = new_context(browser, base_url, theme, DESKTOP)
    try:
        page = context.new_page()
        page.goto(base_url + url, wait_until="networkidle")
        assert settled_scheme(page, theme) == THEMES[theme]
        assert page.locator("pre").count() > 0, f"no code on /{url} to check"
        violations = code_contrast_violations(page)
    finally:
        context.close()
    found = [
        f"{v['impact']} {v['id']} at {[n['target'] for n in v['nodes']][:5]}" for v in violations
    ]
    assert not [v for v in violations if v["impact"] in SERIOUS], "\n".join(found)


@pytest.mark.parametrize("url", PAGES)
def test_every_formula_rendered(visit: VisitFn, url: str) -> None:
    facts = visit(url, "light").facts
    raw = RAW_LATEX.findall(facts["prose"])
    assert not raw, f"raw LaTeX in the visible text: {raw[:5]}"
    assert facts["mathErrors"] == 0, "a formula rendered as <merror>"
    assert all(width > 0 for width in facts["math"]), "a <math> element has no width"
    source = (ROOT / "docs" / NAV[url]).read_text(encoding="utf-8")
    prose = re.sub(r"^([ \t]*)```.*?^\1```", "", source, flags=re.S | re.M)  # no code
    if NAV[url].endswith(".md") and SOURCE_MATH.search(prose):
        assert facts["math"], "the source has math but the page shows no <math>"


@pytest.mark.parametrize(("url", "theme"), PAGES_THEMES)
def test_every_image_loads_and_has_alt_text(visit: VisitFn, url: str, theme: str) -> None:
    for image in visit(url, theme).facts["images"]:
        assert image["loaded"], f"image did not load: {image['src']}"
        assert image["alt"], f"image without alt text: {image['src']}"


@pytest.mark.parametrize(("url", "theme"), PAGES_THEMES)
def test_figures_sit_on_a_light_background(visit: VisitFn, url: str, theme: str) -> None:
    """Figures draw dark text and lines: in both themes what is behind them must be light."""
    for image in visit(url, theme).facts["images"]:
        if image["figure"]:
            assert image["background"] >= 0.6, (
                f"figure {image['src']} on a dark background "
                f"(relative luminance {image['background']:.2f}) in the {theme} theme"
            )


@pytest.mark.parametrize("url", PAGES)
def test_copy_button_copies_the_exact_block(visit: VisitFn, url: str) -> None:
    for copied, expected in visit(url, "light").copies:
        assert copied == expected


WIDTH_PAGES = [
    pytest.param(
        url,
        id=page_id(url),
        marks=[pytest.mark.xfail(reason=NOT_YET_NARROW[url], strict=True)]
        if url in NOT_YET_NARROW
        else [],
    )
    for url in NAV
]


@pytest.mark.parametrize("url", WIDTH_PAGES)
def test_no_code_block_scrolls_sideways_at_desktop_width(visit: VisitFn, url: str) -> None:
    """At 1280 px, every code block and output fits its box: no horizontal scrollbar."""
    wide = visit(url, "light").scrolling_code
    assert not wide, "code blocks that scroll sideways at 1280 px:\n" + "\n".join(wide)


def test_the_width_check_sees_a_long_line(browser: Browser, base_url: str) -> None:
    context = new_context(browser, base_url, "light", DESKTOP)
    try:
        page = context.new_page()
        page.goto(base_url + FIRST_EPISODE, wait_until="load")
        page.evaluate(
            """() => {
              const code = document.querySelector("article pre > code");
              code.textContent = "x = " + "1".repeat(100);
            }"""
        )
        wide = page.evaluate(SCROLLING_CODE)
    finally:
        context.close()
    assert len(wide) == 1
    assert "x = 111" in wide[0]


def test_shown_output_has_no_copy_button(visit: VisitFn) -> None:
    """The copy button copies code only; what a block prints is not code."""
    outputs = visit(FIRST_EPISODE, "light").facts["outputs"]
    assert outputs, "the first episode shows no output"
    assert not [o["text"] for o in outputs if o["copyButton"]]


@pytest.mark.parametrize(("url", "theme"), PAGES_THEMES)
def test_phone_does_not_scroll_sideways(visit: VisitFn, url: str, theme: str) -> None:
    overflow = visit(url, theme).phone_overflow
    assert overflow <= 0, f"the page is {overflow}px wider than a 390px phone"


@pytest.mark.parametrize("url", PAGES)
def test_repository_and_edit_links_are_plain_links(visit: VisitFn, url: str) -> None:
    facts = visit(url, "light").facts
    repo = CONFIG["repo_url"].rstrip("/")
    assert facts["repo"], "no repository link"
    for link in facts["repo"]:
        assert link["href"].rstrip("/") == repo
        assert link["component"] is None, "Material would fetch stars and forks from the API"
    assert facts["edit"] == [f"{repo}/{CONFIG['edit_uri'].strip('/')}/{NAV[url]}"]


@pytest.mark.parametrize("url", PAGES)
def test_page_weight(visit: VisitFn, report: Report, url: str) -> None:
    seen = visit(url, "light")
    size, gzipped = seen.transfer_bytes, seen.gzipped_bytes
    report.add(
        "page weight (first visit: served here, and gzipped as GitHub Pages sends it)",
        f"{size / 1e6:6.2f} MB {gzipped / 1e6:6.2f} MB  /{url}",
    )
    assert 0 < gzipped < size
    if url == FIRST_EPISODE:
        assert gzipped < MAX_EPISODE_BYTES, f"the first episode weighs {gzipped / 1e6:.2f} MB"


def test_search_finds_the_first_episode(browser: Browser, base_url: str) -> None:
    context = new_context(browser, base_url, "light", DESKTOP)
    try:
        page = context.new_page()
        page.goto(base_url, wait_until="networkidle")
        page.locator("input.md-search__input").click()
        page.locator("input.md-search__input").press_sequentially("softmax", delay=20)
        results = page.locator("a.md-search-result__link")
        results.first.wait_for(timeout=10_000)
        links = [urlsplit(link.get_attribute("href") or "").path for link in results.all()]
    finally:
        context.close()
    assert SITE_PATH + FIRST_EPISODE in links, f"search for softmax gave {links}"


def test_theme_toggle_cycles_light_dark_and_system(browser: Browser, base_url: str) -> None:
    """The palette toggle goes auto -> light -> dark -> auto, and the page follows."""
    context = new_context(browser, base_url, "dark", DESKTOP)
    try:
        page = context.new_page()
        page.goto(base_url, wait_until="load")
        toggle = page.locator("form[data-md-component=palette] label:not([hidden])")
        seen = [page.get_attribute("body", "data-md-color-scheme")]
        for _ in range(3):
            toggle.first.click()
            seen.append(page.get_attribute("body", "data-md-color-scheme"))
    finally:
        context.close()
    assert seen == ["slate", "default", "slate", "slate"]


@pytest.mark.parametrize("theme", THEMES)
def test_missing_page_shows_the_styled_404(
    browser: Browser, base_url: str, screenshots: Path, theme: str
) -> None:
    context = new_context(browser, base_url, theme, DESKTOP)
    try:
        page = context.new_page()
        visit = Visit("no-such-page/", theme)
        record(page, visit)
        response = page.goto(base_url + "no/such/page/", wait_until="networkidle")
        facts = page.evaluate(PAGE_FACTS)
        violations = Axe().run(page).response["violations"]
        scheme = settled_scheme(page, theme)
        page.screenshot(path=screenshots / f"404-{theme}-desktop.png")
    finally:
        context.close()
    assert response is not None
    assert response.status == 404
    assert "404" in facts["h1"]
    assert facts["styled"], "the 404 page has no stylesheet"
    assert scheme == THEMES[theme]
    missing = base_url + "no/such/page/"
    assert [f for f in visit.failed if not f.startswith(missing)] == []
    assert [e for e in visit.console_errors if "404" not in e] == []
    assert not visit.offsite(origin_of(base_url))
    assert not [v["id"] for v in violations if v["impact"] in SERIOUS]


def png(size: int, rgba: tuple[int, int, int, int]) -> str:
    """A data: URI of a ``size`` x ``size`` PNG of one colour, as nbconvert embeds figures."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    pixels = b"".join(b"\x00" + bytes(rgba) * size for _ in range(size))
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(pixels))
    return "data:image/png;base64," + base64.b64encode(data + chunk(b"IEND", b"")).decode()


@pytest.mark.skipif(not NOTEBOOK_PAGES, reason="no notebook in the nav")
def test_figure_checks_are_not_vacuous(browser: Browser, base_url: str) -> None:
    """In the dark theme, a figure with no alt text and a dark figure are caught, and a
    transparent notebook figure is shown on the light card extra.css gives it."""
    transparent, dark = png(8, (0, 0, 0, 0)), png(9, (20, 20, 20, 255))
    context = new_context(browser, base_url, "dark", DESKTOP)
    try:
        page = context.new_page()
        page.goto(base_url + NOTEBOOK_PAGES[0], wait_until="load")
        page.evaluate(
            """([transparent, dark]) => {
              const output = document.createElement("div");
              output.className = "jp-OutputArea-output";
              output.innerHTML = `<img src="${transparent}"><img src="${dark}" alt="Dark">`;
              document.querySelector(".jupyter-wrapper").append(output);
            }""",
            [transparent, dark],
        )
        facts = page.evaluate(PAGE_FACTS)
    finally:
        context.close()
    images = {image["src"]: image for image in facts["images"]}
    on_card, on_dark = images[transparent[:60]], images[dark[:60]]
    assert on_card["figure"]
    assert on_card["loaded"]
    assert on_card["alt"] == ""
    assert on_card["background"] > 0.9
    assert on_dark["alt"] == "Dark"
    assert on_dark["background"] < 0.1
