// CI check: every link of the built book (mdBook's HTML) resolves. Each `href` and `src` of
// every page is a relative path to a file that exists in the built book (percent-decoded, from
// the page's folder, or from the root a page's `<base href="/">` names) and, with a
// `#fragment`, to an element of that page with that id; a bare `#fragment` is an id of its own
// page. Links off the machine (http, https, mailto) are listed, never fetched.
//
//   node check-book.mjs BUILT_BOOK_DIR
import fs from "node:fs";
import path from "node:path";

const [root] = process.argv.slice(2);
if (!root) {
  console.error("usage: node check-book.mjs BUILT_BOOK_DIR");
  process.exit(2);
}

const pages = fs.readdirSync(root, { recursive: true }).filter((f) => f.endsWith(".html"));
if (!pages.some((p) => p === "index.html")) throw new Error(`${root}: no index.html: is it a built book?`);

const entity = (s) =>
  s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
const attributes = (html, name) =>
  [...html.matchAll(new RegExp(`\\s${name}="([^"]*)"`, "g"))].map((m) => entity(m[1]));

const ids = new Map();
const idsOf = (file) => {
  if (!ids.has(file)) ids.set(file, new Set(attributes(fs.readFileSync(file, "utf8"), "id")));
  return ids.get(file);
};

const problems = [];
const external = new Set();
let checked = 0;
for (const page of pages) {
  const file = path.join(root, page);
  // mdBook's 404 page resolves its links from the book's root (`<base href="/">`).
  const rooted = /<base href="\/">/.test(fs.readFileSync(file, "utf8"));
  const html = fs.readFileSync(file, "utf8").replace(/<base [^>]*>/g, "");
  const base = rooted ? root : path.dirname(file);
  for (const link of [...attributes(html, "href"), ...attributes(html, "src")]) {
    if (/^(https?|mailto):/.test(link)) {
      external.add(link);
      continue;
    }
    if (/^[a-z]+:/.test(link)) {
      if (!link.startsWith("data:")) problems.push(`${page}: a link with an unknown scheme: ${link}`);
      continue;
    }
    checked += 1;
    const [target, fragment] = link.split("#", 2);
    const targetFile = target === "" ? file : path.resolve(base, decodeURIComponent(target.split("?")[0]));
    if (!targetFile.startsWith(path.resolve(root) + path.sep) && targetFile !== path.resolve(root)) {
      problems.push(`${page}: ${link}: outside the book`);
    } else if (!fs.existsSync(targetFile)) {
      problems.push(`${page}: ${link}: no such file`);
    } else if (fragment && targetFile.endsWith(".html") && !idsOf(targetFile).has(decodeURIComponent(fragment))) {
      problems.push(`${page}: ${link}: no element with that id`);
    }
  }
}

for (const link of [...external].sort()) console.log(`external (not fetched): ${link}`);
console.log(`book: ${pages.length} pages, ${checked} links checked, ${problems.length} broken, ${external.size} external`);
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
