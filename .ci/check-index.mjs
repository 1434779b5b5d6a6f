// Loads a run folder's index.html in headless Chromium (puppeteer-core, Debian's chromium) and
// fails on a console error or warning, a page error, a failed request, a link that does not
// resolve (a file that is not there, an anchor with no target, anything off this machine), or
// a page without its inline timelines. Writes a full-page screenshot.
//
//   node check-index.mjs INDEX_HTML SCREENSHOT_PNG
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import puppeteer from "puppeteer-core";

const [indexPath, shotPath] = process.argv.slice(2);
if (!indexPath || !shotPath) {
  console.error("usage: node check-index.mjs INDEX_HTML SCREENSHOT_PNG");
  process.exit(2);
}
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu"],
});
const problems = [];
try {
  const page = await browser.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warn") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
  page.on("request", (r) => {
    if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) problems.push(`a request off this machine: ${r.url()}`);
  });
  await page.setViewport({ width: 1280, height: 900 });
  await page.goto(pathToFileURL(path.resolve(indexPath)).href, { waitUntil: "load" });

  const links = await page.$$eval("a[href]", (as) => as.map((a) => ({ raw: a.getAttribute("href"), url: a.href })));
  for (const { raw, url } of links) {
    if (raw.startsWith("#")) {
      const found = await page.$(`[id="${decodeURIComponent(raw.slice(1))}"]`);
      if (!found) problems.push(`an anchor with no target: ${raw}`);
      continue;
    }
    const target = new URL(url);
    if (target.protocol !== "file:") {
      problems.push(`a link off this machine: ${raw}`);
    } else if (!fs.existsSync(fileURLToPath(target))) {
      problems.push(`a link to nothing: ${raw}`);
    }
  }
  const svgs = await page.$$eval("svg", (s) => s.length);
  const sections = await page.$$eval("section", (s) => s.length);
  if (sections === 0 || svgs < sections) problems.push(`${sections} runs but ${svgs} inline timelines`);
  fs.mkdirSync(path.dirname(path.resolve(shotPath)), { recursive: true });
  await page.screenshot({ path: shotPath, fullPage: true });
  console.log(`${indexPath}: ${links.length} links resolve, ${sections} runs with their timelines, no console error; screenshot ${shotPath}`);
} finally {
  await browser.close();
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
