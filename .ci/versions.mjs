// The nightly workflow's `latest` and `latest~K` over both channels, from the registry's answers
// to the very commands wakeprobe runs (src/backend/registry.rs), resolved as src/backend/catalog.rs
// resolves them: the claude-code package's versions, plus each version only an Agent SDK release
// declares (`claudeCodeVersion`) whose platform package for linux-x64 it pins, in semver order
// (never by publish time). tests/e2e/workflow.rs checks that both give the same answers.
//
//   npm view @anthropic-ai/claude-code versions --json > code.json
//   npm view '@anthropic-ai/claude-agent-sdk@>=0.0.0' name version claudeCodeVersion \
//     optionalDependencies --json > sdk.json
//   node versions.mjs code.json sdk.json [K...]     # prints `latest=V` and `latest~K=V (channel)`
import fs from "node:fs";

const [codeFile, sdkFile, ...backs] = process.argv.slice(2);
if (!codeFile || !sdkFile) {
  console.error("usage: node versions.mjs CODE_JSON SDK_JSON [K...]");
  process.exit(2);
}
const PLATFORM_PACKAGE = "@anthropic-ai/claude-agent-sdk-linux-x64";
const read = (file) => [JSON.parse(fs.readFileSync(file, "utf8"))].flat();
const stable = (v) => typeof v === "string" && /^\d+\.\d+\.\d+$/.test(v);
const key = (v) => v.split(".").map(Number);
const order = (a, b) => {
  const [x, y] = [key(a), key(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};

const channel = new Map(read(codeFile).filter(stable).map((v) => [v, "claude-code"]));
const sdkOnly = read(sdkFile)
  .filter((r) => stable(r.claudeCodeVersion) && !channel.has(r.claudeCodeVersion))
  .filter((r) => r.optionalDependencies?.[PLATFORM_PACKAGE] === r.version)
  .sort((a, b) => order(b.version, a.version)); // the newer SDK release wins a version
for (const r of sdkOnly) {
  if (!channel.has(r.claudeCodeVersion)) channel.set(r.claudeCodeVersion, `agent-sdk ${r.version}`);
}
const versions = [...channel.keys()].sort(order);
const at = (k) => versions[versions.length - 1 - k];
console.log(`latest=${at(0)}`);
for (const k of backs.map(Number)) {
  const v = at(k);
  const via = channel.get(v);
  console.log(`latest~${k}=${v}${via === "claude-code" ? "" : ` (${via})`}`);
}
