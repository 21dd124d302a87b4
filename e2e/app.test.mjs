// End-to-end test of the real Dyno app: the release binary of src-tauri,
// driven through tauri-driver and WebKitWebDriver (Debian webkit2gtk-driver)
// under Xvfb, against a fresh SQLite file and the real SmolLM2 test model
// measured by real llama.cpp in the app's own worker processes.
//
// Run by scripts/test/e2e.sh, which builds the app, starts Xvfb and tauri-driver,
// and sets DYNO_APP, DYNO_TEST_MODELS and E2E_OUT.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";

import { remote } from "webdriverio";

const APP = process.env.DYNO_APP;
const MODELS = process.env.DYNO_TEST_MODELS;
const OUT = process.env.E2E_OUT ?? path.resolve("screenshots");
const SMOL = path.join(MODELS ?? "", "SmolLM2-135M-Instruct.Q4_1.gguf");
const PORT = Number(process.env.TAURI_DRIVER_PORT ?? 4444);

assert.ok(APP && fs.existsSync(APP), `DYNO_APP must name the built app, got ${APP}`);
assert.ok(fs.existsSync(SMOL), `the test model is missing: ${SMOL}; run scripts/lib/fetch-test-models.sh`);

// tauri-driver starts the app, so the app's database is set where the
// driver starts (scripts/test/e2e.sh): DYNO_DB, in the scratch folder E2E_SCRATCH.
const db = process.env.DYNO_DB;
const scratch = process.env.E2E_SCRATCH ?? fs.mkdtempSync(path.join(os.tmpdir(), "dyno-e2e-"));
assert.ok(db, "DYNO_DB must name the database the app under test uses");
let browser;

/** Wait for the element with this test id, and return it. */
async function byId(id, timeout = 20_000) {
  const el = await browser.$(`[data-testid="${id}"]`);
  await el.waitForExist({ timeout, timeoutMsg: `no [data-testid=${id}] after ${timeout} ms` });
  return el;
}

async function shot(name) {
  fs.mkdirSync(OUT, { recursive: true });
  // The app paints without accelerated compositing on Linux (src-tauri's
  // main.rs). Then WebKitWebDriver's screenshot waits for the next paint, and
  // a page at rest never paints, so the request hung. Repaint for a moment,
  // invisibly (a transparent outline toggled every frame), while it is taken.
  await browser.execute(() => {
    const root = document.documentElement;
    const end = performance.now() + 1500;
    let odd = false;
    const step = () => {
      odd = !odd;
      root.style.outline = odd && performance.now() < end ? "1px solid transparent" : "";
      if (performance.now() < end) requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
  await browser.saveScreenshot(path.join(OUT, `${name}.png`));
}

/**
 * Screenshots `name-1024` and `name-1920`: the view at a small laptop's
 * window and at full HD, scrolled to `scrollTo` (a test id) when given,
 * then the window back at its usual size.
 */
async function shotsAtSizes(name, scrollTo, scrollOptions) {
  for (const [w, h] of [[1024, 700], [1920, 1080]]) {
    await browser.setWindowSize(w, h);
    await browser.pause(300);
    if (scrollTo) {
      await (await byId(scrollTo)).scrollIntoView(scrollOptions);
      await browser.pause(200);
    }
    await shot(`${name}-${w}`);
  }
  await browser.setWindowSize(1280, 820);
}

async function setValue(id, value) {
  const el = await byId(id);
  await el.clearValue();
  if (String(value) !== "") await el.setValue(String(value));
}

/** The attribute `name` of every element matching `selector`. */
async function attrs(selector, name) {
  const out = [];
  for (const el of await browser.$$(selector)) out.push(await el.getAttribute(name));
  return out;
}

/** The visible text of every element `selector` finds. */
async function texts(selector) {
  const out = [];
  for (const el of await browser.$$(selector)) out.push(await el.getText());
  return out;
}

/**
 * Run the Benchmark form without quality and wait until it ends; returns
 * the status text. One file is one benchmark, else a sweep of levels.
 */
async function runSweep({ kind, files, base, levels, prompt = 32, gen = 8, reps = 1, rpc = "" }) {
  await (await byId("nav-sweep")).click();
  await (await byId("sweep-source-kind")).selectByAttribute("value", kind);
  if (files) await setValue("sweep-files", files.join("\n"));
  if (base) await setValue("sweep-base", base);
  if (levels !== undefined) await setValue("sweep-levels", levels);
  // The form keeps the last job's values: every sweep says its servers.
  await setValue("sweep-rpc", rpc);
  await (await byId("sweep-preset")).selectByAttribute("value", "custom");
  await setValue("sweep-prompt", prompt);
  await setValue("sweep-gen", gen);
  await setValue("sweep-reps", reps);
  const quality = await byId("sweep-quality");
  if (await quality.isSelected()) await quality.click();
  await (await byId("sweep-run")).click();
  const status = await byId("sweep-status");
  await browser.waitUntil(
    async () => /done|failed|cancelled/.test(await status.getText()),
    { timeout: 300_000, interval: 500, timeoutMsg: "the sweep did not end in 5 minutes" },
  );
  return status.getText();
}

before(async () => {
  browser = await remote({
    hostname: "127.0.0.1",
    port: PORT,
    logLevel: "warn",
    capabilities: {
      "tauri:options": { application: APP },
    },
  });
});

after(async () => {
  if (browser) await browser.deleteSession();
});

test("the app starts and shows the hardware", async () => {
  const t0 = Date.now();
  const cpu = await byId("hw-cpu", 60_000);
  await browser.waitUntil(async () => (await cpu.getText()).trim().length > 0, { timeout: 60_000 });
  const cpuName = fs.readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1] ?? "";
  const shown = await cpu.getText();
  // The CPU's brand as the kernel names it (the app may shorten the rest).
  assert.ok(shown.length > 0 && cpuName.includes(shown.split(" ")[0]), `CPU shown as '${shown}', kernel says '${cpuName}'`);
  const title = await browser.getTitle();
  assert.match(title, /^Dyno \d+\.\d+\.\d+/, "the window title carries the version");
  console.log(`overview with hardware after ${Date.now() - t0} ms`);
  // A fresh database: the first-run card leads to a first result.
  const welcome = await byId("welcome", 30_000);
  assert.match(await welcome.getText(), /prefill/);
  assert.ok(await (await byId("welcome-add-folder")).isExisting());
  // llama.cpp's backend modules, as the app loaded them: the CPU module from
  // beside the executable, with its device.
  const modules = await byId("hw-modules", 30_000);
  const modulesText = await modules.getText();
  assert.match(modulesText, /libggml-cpu\.so · CPU · .* loaded/, modulesText);
  assert.match(modulesText, /executable folder/, modulesText);
  await shot("overview");
  // With no model and no network, a released model's shape is a way
  // forward too: its size from the built-in header, then the Benchmark
  // form filled to measure it (run in a later journey, so this database
  // stays without results for the first benchmark's).
  await (await byId("shape-measure-shape")).selectByAttribute("value", "smollm2-360m");
  await (await byId("shape-measure-level")).selectByAttribute("value", "Q4_0");
  const size = await byId("shape-measure-size");
  await browser.waitUntil(async () => /36\d\.\d\d M parameters, 216\.8 MiB of weights/.test(await size.getText()), {
    timeout: 30_000,
    timeoutMsg: "the shape's size is not shown",
  });
  await (await byId("welcome")).scrollIntoView({ block: "end" });
  await shot("overview-first-screen");
  await (await byId("shape-measure-go")).click();
  assert.equal(await (await byId("sweep-source-kind")).getValue(), "shape");
  assert.equal(await (await byId("sweep-shape")).getValue(), "smollm2-360m");
  assert.equal(await (await byId("sweep-shape-levels")).getValue(), "Q4_0");
  assert.ok(!(await (await byId("sweep-quality")).isEnabled()), "no quality from synthetic weights");
  await (await byId("nav-overview")).click();
});

test("a folder added in the app lists its model, and two clicks benchmark it with a chart", async () => {
  // A folder with a space in its name, outside HOME, as people keep models.
  const folder = path.join(scratch, "LLM Models");
  fs.mkdirSync(folder, { recursive: true });
  fs.symlinkSync(SMOL, path.join(folder, path.basename(SMOL)));
  fs.writeFileSync(path.join(folder, "notes.txt"), "not a model");
  await (await byId("nav-models")).click();
  // The native dialog cannot be driven here; the typed path goes through
  // the same command (add_model_place) the dialog's answer does.
  await setValue("place-path", folder);
  await (await byId("place-add")).click();
  const msg = await byId("place-message", 30_000);
  assert.match(await msg.getText(), /Added the folder .*LLM Models \(1 model\)/);
  const row = await browser.$(`[data-testid="model-row"][data-path="${path.join(folder, path.basename(SMOL))}"]`);
  await row.waitForExist({ timeout: 30_000, timeoutMsg: "the added folder's model is not listed" });
  assert.match(await row.getText(), /SmolLM2-135M-Instruct\.Q4_1\.gguf/);
  assert.ok(await (await byId("place")).isExisting(), "the folder is listed under the added places");
  // Before it is ever run: its speed predicted here, from priors (nothing
  // has been measured in this fresh database yet).
  const predicted = await row.$('[data-testid="model-predicted"]');
  await browser.waitUntil(async () => /decode ~[\d.]+ t\/s \([\d.]+–[\d.]+\)/.test(await predicted.getText()), {
    timeout: 60_000,
    timeoutMsg: "no prediction beside the model",
  });
  assert.match(await predicted.getText(), /prior/);
  await shot("models-added");
  for (const [w, h] of [[1024, 700], [1920, 1080]]) {
    await browser.setWindowSize(w, h);
    await predicted.scrollIntoView();
    await browser.pause(300);
    // The row's buttons are in view at either size: no sideways scroll.
    const wide = await browser.execute(() => {
      const t = document.querySelector(".local-models")?.closest(".table-wrap");
      return t ? t.scrollWidth > t.clientWidth + 1 : null;
    });
    assert.equal(wide, false, `the models table scrolls sideways at ${w} px`);
    await shot(`models-added-${w}`);
  }
  await browser.setWindowSize(1280, 820);
  const t0 = Date.now();
  await (await row.$('[data-testid="model-benchmark"]')).click();
  // The presets with their tests and estimated times; Standard is
  // llama-bench's defaults (pp512, tg128, 5 repetitions).
  await byId("preset-picker");
  const presets = await attrs('[data-testid="preset"]', "data-preset");
  assert.deepEqual(presets, ["quick", "standard", "thorough"]);
  assert.match(await (await byId("preset-time")).getText(), /^about \d+ (s|min)$/);
  // Standard shows llama-bench's plan before it starts; the journey runs
  // Quick (pp128, tg32), a newcomer's first minute, to keep CI short.
  const standard = await browser.$('[data-testid="preset"][data-preset="standard"]');
  assert.match(await standard.getText(), /pp512.*tg128/s);
  await standard.click();
  await shot("presets");
  await shotsAtSizes("presets", "preset-picker");
  await (await browser.$('[data-testid="preset"][data-preset="quick"]')).click();
  await (await byId("preset-start")).click();
  const status = await byId("sweep-status");
  // The overall bar and the phase in words while it runs.
  await byId("sweep-overall", 30_000);
  await browser.waitUntil(async () => /done|failed|cancelled/.test(await status.getText()), {
    timeout: 300_000,
    interval: 500,
    timeoutMsg: "the benchmark did not end in 5 minutes",
  });
  assert.match(await status.getText(), /done/);
  // One benchmark is one result: the run of this file, charted, never a sweep.
  const result = await byId("bench-result", 30_000);
  assert.equal((await result.$$('[data-testid="run-detail"]')).length, 1);
  assert.ok(!(await browser.$('[data-testid="level-chart"]').isExisting()), "a benchmark shows no sweep chart");
  const chart = await result.$('[data-testid="run-chart"]');
  // The Quick preset's plan: pp128 and tg32.
  assert.match(await chart.getText(), /pp128/);
  assert.match(await chart.getText(), /tg32/);
  await chart.scrollIntoView();
  console.log(`folder journey: benchmark to chart in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await shot("first-benchmark");
  await shotsAtSizes("first-benchmark", "bench-result");
  await (await byId("nav-results")).click();
  await browser.waitUntil(async () => (await browser.$$('[data-testid="results-row"]')).length > 0, { timeout: 30_000 });
  const targets = await attrs('[data-testid="results-row"]', "data-target");
  assert.equal(targets.length, 1, `one benchmark, one row in Results: ${targets}`);
  assert.ok(!targets[0].includes(":"), `the row is the run, not a sweep: ${targets}`);
  await shot("first-benchmark-results");
  // The Overview lists it among the recent results, with its figures.
  await (await byId("nav-overview")).click();
  const recent = await byId("recent-result", 30_000);
  assert.match(await recent.getText(), /t\/s/);
  await shotsAtSizes("overview-recent", "recent-results");
});

test("Settings point the app at a mirror and save a token outside the database", async () => {
  // scripts/test/e2e.sh gives the app no HF_ENDPOINT: the fake hub's address is
  // typed here, as a person behind a mirror would.
  const hubUrl = process.env.E2E_HUB_URL;
  assert.ok(hubUrl, "E2E_HUB_URL must name the fake hub");
  await (await byId("nav-settings")).click();
  assert.match(await (await byId("endpoint-in-force")).getText(), /huggingface\.co .*the default/);
  await setValue("endpoint-input", `${hubUrl}/`);
  await (await byId("endpoint-save")).click();
  await browser.waitUntil(async () => (await (await byId("endpoint-in-force")).getText()).includes(`${hubUrl} (saved here)`), {
    timeout: 10_000,
    timeoutMsg: "the saved endpoint is not the one in use",
  });
  const token = "hf_e2e_secret_token_AbCd";
  await setValue("token-input", token);
  await (await byId("token-save")).click();
  await browser.waitUntil(async () => /hf_…AbCd/.test(await (await byId("token-status")).getText()), {
    timeout: 10_000,
    timeoutMsg: "the saved token is not shown masked",
  });
  assert.equal(await (await byId("token-input")).getValue(), "", "the field is cleared once saved");
  const tokenFile = path.join(process.env.HF_HOME ?? "", "token");
  assert.equal(fs.readFileSync(tokenFile, "utf8"), token, "saved where huggingface_hub keeps it");
  assert.equal(fs.statSync(tokenFile).mode & 0o777, 0o600);
  for (const f of fs.readdirSync(path.dirname(db))) {
    const p = path.join(path.dirname(db), f);
    if (fs.statSync(p).isFile()) assert.ok(!fs.readFileSync(p).includes(token), `the token is in ${p}`);
  }
  assert.doesNotMatch(await browser.$("body").getText(), new RegExp(token), "the page never shows the whole token");
  await (await byId("hub-check")).click();
  const check = await byId("hub-check-result", 30_000);
  assert.match(await check.getText(), /Reached .*127\.0\.0\.1.*belongs to user-AbCd/);
  await shot("settings");
  // Readable at the smallest and a large window size too.
  await shotsAtSizes("settings");
  await (await byId("token-remove")).click();
  await browser.waitUntil(async () => /No token saved/.test(await (await byId("token-status")).getText()), {
    timeout: 10_000,
    timeoutMsg: "the removed token is still shown",
  });
  assert.ok(!fs.existsSync(tokenFile), "Remove token deletes the file");
});

test("a hub level is measured before downloading it, from its header and synthetic weights", async () => {
  const t0 = Date.now();
  await (await byId("nav-models")).click();
  await setValue("hub-query", "SmolLM2");
  await (await byId("hub-search")).click();
  await (await byId("hub-repo", 30_000)).click();
  const level = await browser.$('[data-testid="hub-level"][data-level="Q4_1"]');
  await level.waitForExist({ timeout: 30_000, timeoutMsg: "the repo's Q4_1 level is not listed" });
  await (await level.$('[data-testid="level-synth"]')).click();
  // The Sweep form opens on that one level by its shape, with the plan shown
  // before anything starts and no quality from made-up weights.
  assert.equal(await (await byId("sweep-repo")).getValue(), "dyno-test/SmolLM2-135M-Instruct-GGUF");
  assert.equal(await (await byId("sweep-repo-levels")).getValue(), "Q4_1");
  assert.ok(await (await byId("sweep-shape-only")).isSelected());
  assert.ok(!(await (await byId("sweep-keep")).isSelected()), "the synthetic file is deleted unless asked");
  assert.ok(!(await (await byId("sweep-quality")).isEnabled()), "no quality from synthetic weights");
  assert.equal(await (await byId("sweep-preset")).getValue(), "quick");
  await shot("synth-level");
  await (await byId("sweep-run")).click();
  const status = await byId("sweep-status");
  await browser.waitUntil(async () => /done|failed|cancelled/.test(await status.getText()), {
    timeout: 300_000,
    interval: 500,
    timeoutMsg: "the benchmark of the synthetic twin did not end in 5 minutes",
  });
  assert.match(await status.getText(), /done/);
  // The log says how little of the 93.8 MiB file was read, and that the
  // synthetic file is gone.
  const log = [];
  for (const li of await browser.$$("ul.warnings li")) log.push(await li.getText());
  // (Listing the repo predicted its levels, which may have cached the header already.)
  const line = log.find((l) => l.startsWith("dyno-test/SmolLM2-135M-Instruct-GGUF:Q4_1: its shape measured with synthetic weights"));
  assert.ok(line, `the sweep's log: ${log.join(" | ")}`);
  const read = line.match(/([\d.]+) (B|KiB|MiB) of the 93\.81 MiB file read/);
  assert.ok(read ? Number(read[1]) / ({ B: 1 << 20, KiB: 1024, MiB: 1 }[read[2]]) < 9.4 : /its header was cached/.test(line), line);
  assert.ok(log.some((l) => /synthetic files are deleted/.test(l)), log.join(" | "));
  const synthDir = path.join(process.env.DYNO_CACHE_DIR ?? "", "synth");
  const left = fs.existsSync(synthDir) ? fs.readdirSync(synthDir) : [];
  assert.deepEqual(left, [], "no synthetic file is left in the cache");
  await byId("sweep-level-synthetic", 30_000);
  // Its figures are never listed as the real level's: Results marks them.
  await (await byId("nav-results")).click();
  const mark = await byId("results-synthetic", 30_000);
  assert.match(await mark.getAttribute("title"), /synthetic weights: twin of .*seed 1/);
  await shot("synth-level-results");
  await shotsAtSizes("synth-level-results");
  // The run's page says what the weights stand for, under its header.
  let opened = false;
  for (const row of await browser.$$('[data-testid="results-row"]')) {
    const run = !(await row.getAttribute("data-target")).includes(":");
    if (run && (await row.$('[data-testid="results-synthetic"]').isExisting())) {
      await (await row.$('[data-testid="results-open"]')).click();
      opened = true;
      break;
    }
  }
  assert.ok(opened, "a run of the twin is listed");
  const note = await byId("run-synthetic", 30_000);
  assert.match(await note.getText(), /twin of .*seed 1.*quality means nothing/s);
  await shot("synth-level-run");
  // Nothing of the level was downloaded: the hub cache holds no blob of it.
  const blobs = path.join(process.env.HF_HOME ?? "", "hub", "models--dyno-test--SmolLM2-135M-Instruct-GGUF", "blobs");
  assert.ok(!fs.existsSync(blobs) || fs.readdirSync(blobs).length === 0, `blobs: ${fs.existsSync(blobs) && fs.readdirSync(blobs)}`);
  console.log(`synthetic twin: header to a benchmark in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});

test("a hub repo's levels are swept by their shapes without downloading, labelled and without quality", async () => {
  await (await byId("nav-models")).click();
  await setValue("hub-query", "SmolLM2");
  await (await byId("hub-search")).click();
  await (await byId("hub-repo", 30_000)).click();
  await (await byId("repo-sweep-shapes", 30_000)).click();
  // The plan is shown first: the repo, by shape only, no quality.
  assert.equal(await (await byId("sweep-repo")).getValue(), "dyno-test/SmolLM2-135M-Instruct-GGUF");
  assert.ok(await (await byId("sweep-shape-only")).isSelected());
  assert.ok(!(await (await byId("sweep-quality")).isEnabled()), "no quality from synthetic weights");
  // The test repo's Q8_0 is random bytes; its Q4_1 is the real file.
  await setValue("sweep-repo-levels", "q4_1");
  await (await byId("sweep-preset")).selectByAttribute("value", "custom");
  await setValue("sweep-prompt", 32);
  await setValue("sweep-gen", 8);
  await setValue("sweep-reps", 1);
  await setValue("sweep-rpc", "");
  await (await byId("sweep-keep")).click();
  await shot("sweep-shapes-form");
  await (await byId("sweep-run")).click();
  const status = await byId("sweep-status");
  await browser.waitUntil(async () => /done|failed|cancelled/.test(await status.getText()), {
    timeout: 300_000,
    interval: 500,
    timeoutMsg: "the shape-only sweep did not end in 5 minutes",
  });
  assert.match(await status.getText(), /done/);
  const mark = await byId("sweep-level-synthetic", 30_000);
  assert.match(await mark.getAttribute("title"), /twin of .*SmolLM2-135M-Instruct\.Q4_1\.gguf, sha256 [0-9a-f]{12}\).*seed 1/);
  assert.match(await (await byId("sweep-synthetic")).getText(), /no quality figures/);
  // Kept when asked (`--keep`), in Dyno's cache, to be benchmarked again.
  const kept = fs.readdirSync(path.join(process.env.DYNO_CACHE_DIR ?? "", "synth")).filter((f) => f.endsWith(".gguf"));
  assert.equal(kept.length, 1, `kept: ${kept}`);
  await shotsAtSizes("sweep-shapes", "sweep-synthetic", { block: "center" });
  const blobs = path.join(process.env.HF_HOME ?? "", "hub", "models--dyno-test--SmolLM2-135M-Instruct-GGUF", "blobs");
  assert.ok(!fs.existsSync(blobs) || fs.readdirSync(blobs).length === 0, "nothing was downloaded");
});

test("a released model's shape is measured with no model at all, from Dyno's built-in header", async () => {
  const synthDir = path.join(process.env.DYNO_CACHE_DIR ?? "", "synth");
  const mine = () => (fs.existsSync(synthDir) ? fs.readdirSync(synthDir) : []).filter((f) => f.startsWith("smollm2-360m-Q4_0"));
  await (await byId("nav-sweep")).click();
  await (await byId("sweep-source-kind")).selectByAttribute("value", "shape");
  await (await byId("sweep-shape")).selectByAttribute("value", "smollm2-360m");
  await setValue("sweep-shape-levels", "q4_0");
  await (await byId("sweep-preset")).selectByAttribute("value", "custom");
  await setValue("sweep-prompt", 32);
  await setValue("sweep-gen", 8);
  await setValue("sweep-reps", 1);
  await setValue("sweep-rpc", "");
  // The form keeps the last job's Keep box (the repo's, ticked above).
  const keep = await byId("sweep-shape-keep");
  if (await keep.isSelected()) await keep.click();
  assert.ok(!(await (await byId("sweep-quality")).isEnabled()), "no quality from synthetic weights");
  await shot("sweep-shape-form");
  await (await byId("sweep-run")).click();
  const status = await byId("sweep-status");
  await browser.waitUntil(async () => /done|failed|cancelled/.test(await status.getText()), {
    timeout: 300_000,
    interval: 500,
    timeoutMsg: "the shape sweep did not end in 5 minutes",
  });
  assert.match(await status.getText(), /done/);
  const mark = await byId("sweep-level-synthetic", 30_000);
  assert.match(await mark.getAttribute("title"), /smollm2-360m Q4_0 from Dyno's built-in llama header, seed 1/);
  assert.match(await (await byId("sweep-synthetic")).getText(), /no quality figures/);
  assert.match(await (await byId("sweep-detail")).getText(), /released model's shape/);
  assert.deepEqual(mine(), [], "the synthetic file is deleted afterwards");
  await shotsAtSizes("sweep-shape", "sweep-synthetic", { block: "center" });
});

test("a released model's shape is written from a small model's header with synthetic weights", async () => {
  // "Synthetic model…" is `dyno synth --like FILE --shape S --type T` by clicks.
  await (await byId("nav-models")).click();
  await (await byId("open-synth")).click();
  await setValue("synth-like", SMOL);
  await (await byId("synth-shape")).selectByAttribute("value", "smollm2-360m");
  await (await byId("synth-level")).selectByAttribute("value", "Q4_0");
  await (await byId("synth-check")).click();
  const checked = await byId("synth-checked", 30_000);
  // SmolLM2-360M's published shape: 362 M parameters.
  assert.match(await checked.getText(), /smollm2-360m Q4_0: 36\d\.\d\d M parameters, 216\.8 MiB of weights/);
  await (await byId("synth-write")).click();
  const written = await byId("synth-written", 120_000);
  const text = await written.getText();
  const file = text.match(/ to (\/.+\.synth\.gguf)\./)?.[1];
  assert.ok(file && fs.existsSync(file), `the written file: '${text}'`);
  await shot("synth-form");
  await shotsAtSizes("synth-form");
  await (await byId("synth-close")).click();
});

test("a mixture of experts is written at a K level, and its routing is counted and shown", async () => {
  // The form's levels are those `dyno synth --type` writes: every K level now.
  await (await byId("nav-models")).click();
  await (await byId("open-synth")).click();
  await setValue("synth-like", SMOL);
  const names = await browser.execute(() =>
    [...document.querySelectorAll('[data-testid="synth-level"] option')].map((o) => o.value),
  );
  for (const l of ["Q2_K", "Q3_K_M", "Q4_K_S", "Q5_K_S"]) assert.ok(names.includes(l), `level ${l} offered: ${names}`);
  await (await byId("synth-shape")).selectByAttribute("value", "");
  await setValue("synth-changes", "layers=2,embd=256,ff=512,heads=4,heads_kv=2,experts=8");
  await (await byId("synth-level")).selectByAttribute("value", "Q3_K_M");
  await (await byId("synth-write")).click();
  await byId("synth-written", 120_000);
  // Dyno decoded the file it wrote and counted each expert's tokens: all
  // 8 reached in some layer, and the busiest expert's share set beside
  // what chance alone gives.
  const routing = await byId("synth-routing", 30_000);
  const text = await routing.getText();
  assert.match(text, /reached \d( to \d)? of the 8 experts in every layer \(2 per token\); the busiest expert took \d\.\d\d× an even share \(\d\.\d\d× for a router picking at random\)/, text);
  await shotsAtSizes("synth-moe", "synth-routing", { block: "center" });
  await (await byId("synth-close")).click();
});

test("a model found on the hub is downloaded, resumed after a cut, and benchmarked", async () => {
  // scripts/test/e2e.sh serves the SmolLM2 file as a repo of a fake hub and cuts
  // its first download short.
  let clicks = 0;
  const click = async (el) => {
    clicks++;
    await el.click();
  };
  const t0 = Date.now();
  await (await byId("nav-models")).click();
  await setValue("hub-query", "SmolLM2");
  await click(await byId("hub-search"));
  const repo = await byId("hub-repo", 30_000);
  assert.equal(await repo.getText(), "dyno-test/SmolLM2-135M-Instruct-GGUF");
  await click(repo);
  const level = await browser.$('[data-testid="hub-level"][data-level="Q4_1"]');
  await level.waitForExist({ timeout: 30_000, timeoutMsg: "the repo's Q4_1 level is not listed" });
  assert.match(await level.getText(), /93\.8 MiB/);
  // Before downloading: speed, fit and quality predicted from the header
  // alone, now calibrated on the runs the earlier tests measured.
  const predicted = await level.$('[data-testid="level-predicted"]');
  await browser.waitUntil(async () => /decode ~[\d.]+ t\/s/.test(await predicted.getText()), {
    timeout: 60_000,
    timeoutMsg: "no prediction beside the level",
  });
  assert.match(await predicted.getText(), /fits in RAM with 4k context/);
  // Every level's header, a small share of the files (this repo holds two
  // levels; 0 B when an earlier run on this machine cached the headers).
  const basis = await (await byId("predict-basis")).getText();
  const [, read, unitRead, fileMiB] = basis.match(/([\d.]+) (B|KiB|MiB) read now, of ([\d.]+) MiB in the files/) ?? [];
  assert.ok(read, `no header bytes in '${basis}'`);
  const readMiB = Number(read) / ({ B: 1 << 20, KiB: 1024, MiB: 1 }[unitRead]);
  assert.ok(readMiB < 0.1 * Number(fileMiB), basis);
  await shot("predicted-levels");
  // As a newcomer sees it on a small laptop and on a large screen.
  await shotsAtSizes("predicted-levels", "predict-basis");
  await click(await level.$('[data-testid="download"]'));
  // The connection is cut after 24 MB: a sentence, and Try again.
  const retry = await byId("hub-retry", 60_000);
  assert.match(await (await byId("hub-error")).getText(), /The download was interrupted/);
  assert.equal(await (await level.$('[data-testid="download"]')).getText(), "Resume");
  await shot("download-cut");
  await retry.click();
  const done = await byId("download-done", 120_000);
  assert.match(await done.getText(), /Saved and verified \(sha256\)/);
  // The finished download also lists the file under "On this machine",
  // above the repo's table, so the page can move under a click made at
  // once: click again (it opens the picker, nothing else) if the first one
  // landed before the page settled.
  await click(await byId("download-benchmark"));
  const picker = await browser.$('[data-testid="preset-picker"]');
  if (!(await picker.waitForExist({ timeout: 5_000 }).catch(() => false))) {
    // Not counted: a person's click lands where they see the button.
    await (await byId("download-benchmark")).click();
  }
  await byId("preset-picker");
  await click(await browser.$('[data-testid="preset"][data-preset="quick"]'));
  await click(await byId("preset-start"));
  const status = await byId("sweep-status");
  await browser.waitUntil(async () => /done|failed|cancelled/.test(await status.getText()), {
    timeout: 300_000,
    interval: 500,
    timeoutMsg: "the benchmark of the downloaded model did not end in 5 minutes",
  });
  assert.match(await status.getText(), /done/);
  await byId("bench-result", 30_000);
  // The download resumed: the cache holds one verified blob of the full size.
  const blobs = path.join(process.env.HF_HOME ?? "", "hub", "models--dyno-test--SmolLM2-135M-Instruct-GGUF", "blobs");
  const files = fs.readdirSync(blobs);
  assert.deepEqual(files.filter((f) => f.endsWith(".incomplete")), [], `blobs: ${files}`);
  assert.equal(fs.statSync(path.join(blobs, files[0])).size, fs.statSync(SMOL).size);
  console.log(`hub journey: ${clicks} clicks (and one Try again after the cut) from search to a result, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});

test("Discard deletes what a cut download left, so nothing partial stays on disk", async () => {
  // The fake hub's second level (random bytes) is cut after 24 MB too.
  await (await byId("nav-models")).click();
  await setValue("hub-query", "SmolLM2");
  await (await byId("hub-search")).click();
  await (await byId("hub-repo", 30_000)).click();
  const level = await browser.$('[data-testid="hub-level"][data-level="Q8_0"]');
  await level.waitForExist({ timeout: 30_000, timeoutMsg: "the repo's Q8_0 level is not listed" });
  // The level downloaded in the journey before is listed as in the cache,
  // not offered for a second download.
  const q41 = await browser.$('[data-testid="hub-level"][data-level="Q4_1"]');
  assert.ok(await q41.$('[data-testid="level-in-cache"]').isExisting(), "Q4_1 is not marked as in the cache");
  assert.ok(!(await q41.$('[data-testid="download"]').isExisting()), "no second Download for a level in the cache");
  await (await level.$('[data-testid="download"]')).click();
  await byId("hub-retry", 60_000);
  const blobs = path.join(process.env.HF_HOME ?? "", "hub", "models--dyno-test--SmolLM2-135M-Instruct-GGUF", "blobs");
  const partial = () => fs.readdirSync(blobs).filter((f) => f.endsWith(".incomplete"));
  assert.equal(partial().length, 1, `a partial download is kept for Resume: ${fs.readdirSync(blobs)}`);
  await (await level.$('[data-testid="download-discard"]')).click();
  const gone = await byId("download-discarded", 30_000);
  assert.match(await gone.getText(), /partial download \(2\d(\.\d)? MiB\) was deleted/);
  assert.deepEqual(partial(), [], "nothing partial left");
  assert.equal(await (await level.$('[data-testid="download"]')).getText(), "Download", "it starts afresh next time");
  await shot("download-discarded");
  await browser.setWindowSize(1024, 700);
  await browser.pause(300);
  await shot("download-discarded-1024");
  await browser.setWindowSize(1280, 820);
});

test("a two-level sweep of SmolLM2 runs from the UI and charts one bar group per level", async () => {
  // Q4_1 is the base itself; Q8_0 is quantised from it by the app's worker.
  const status = await runSweep({ kind: "from", base: SMOL, levels: "Q4_1,Q8_0" });
  assert.match(status, /done/, `sweep status: ${status}`);
  const chart = await byId("level-chart", 30_000);
  await chart.scrollIntoView();
  const levels = await attrs('[data-testid="level-chart"] [data-testid="level-group"]', "data-level");
  assert.deepEqual([...levels].sort(), ["Q4_1", "Q8_0"], `bar groups: ${levels}`);
  // The stored telemetry of both levels, drawn one after the other.
  const timeline = await byId("telemetry-timeline", 30_000);
  assert.ok(await timeline.$("canvas").isExisting(), "the timeline chart is drawn");
  const spans = await browser.$$('[data-testid="timeline-span"]');
  const labels = await Promise.all([...spans].map(async (e) => (await e.getText()).split(" ")[0]));
  assert.deepEqual([...labels].sort(), ["Q4_1", "Q8_0"], `timeline spans: ${labels}`);
  await shot("sweep");
  // At 1024×700 a wide level table says it scrolls rather than hiding columns.
  await browser.setWindowSize(1024, 700);
  const wrap = await browser.$("h3=Levels").nextElement();
  await wrap.scrollIntoView();
  await browser.pause(300);
  const hidden = await wrap.getAttribute("data-hidden");
  const wide = await browser.execute((el) => el.scrollWidth > el.clientWidth + 1, wrap);
  assert.equal(Boolean(hidden), wide, `overflow hint '${hidden}' for a table wider than its box: ${wide}`);
  await shot("sweep-1024");
  await browser.setWindowSize(1280, 820);
});

test("compare shows two runs side by side", async () => {
  await (await byId("nav-results")).click();
  await browser.waitUntil(async () => (await browser.$$('[data-testid="results-row"]')).length >= 3, {
    timeout: 30_000,
    timeoutMsg: "the results list did not show the sweep and its two runs",
  });
  await shot("results");
  await (await byId("results-tab-compare")).click();
  const a = await byId("compare-a");
  const b = await byId("compare-b");
  const values = await attrs('[data-testid="compare-a"] option', "value");
  const runs = values.filter((v) => /^\d+$/.test(v));
  assert.ok(runs.length >= 2, `run targets: ${values}`);
  await a.selectByAttribute("value", runs[0]);
  await b.selectByAttribute("value", runs[1]);
  // The pickers tell A from B by what comes first (name and date), and B
  // never offers the run chosen as A.
  const picked = await browser.execute(() =>
    ["compare-a", "compare-b"].map((id) => {
      const s = document.querySelector(`[data-testid="${id}"]`);
      return s.options[s.selectedIndex].textContent;
    }),
  );
  assert.match(picked[0], /^run \d+ · /, picked[0]);
  assert.notEqual(picked[0].slice(0, 30), picked[1].slice(0, 30), `A and B read alike: ${picked}`);
  assert.ok(!(await attrs('[data-testid="compare-b"] option', "value")).includes(runs[0]), "B offers A's run");
  await (await byId("compare-run")).click();
  const table = await byId("compare-table", 30_000);
  const text = await table.getText();
  assert.match(text, /pp32/, text);
  assert.match(text, /tg8/, text);
  // Each row's B÷A is what its A and B columns say, and the change agrees.
  const rows = await browser.$$('[data-testid="compare-row"]');
  assert.ok(rows.length >= 2, `compared rows: ${rows.length}`);
  for (const r of rows) {
    const cells = await Promise.all([...(await r.$$("td"))].map((c) => c.getText()));
    const num = (t) => Number(t.replace(/[^0-9.\-+]/g, ""));
    const [a, b, ratio, change] = [num(cells[2]), num(cells[3]), num(cells[4]), num(cells[5])];
    assert.ok(a > 0 && b > 0, `figures in ${cells}`);
    assert.ok(Math.abs(ratio - b / a) < 0.02 * (b / a) + 0.01, `B÷A ${ratio} against ${b}/${a}: ${cells}`);
    assert.ok(Math.abs(change - (b / a - 1) * 100) < 2, `change ${change}% against ${b}/${a}: ${cells}`);
  }
  assert.match(await (await byId("compare-summary")).getText(), /tests? compared/);
  assert.match(await (await byId("compare-differs-first")).getText(), /^Measured (alike|differently)/);
  assert.ok(await (await byId("compare-chart")).$("svg").isExisting(), "the comparison is charted");
  await shotsAtSizes("compare");
  await shot("compare");
});

test("export writes a result card file", async () => {
  await (await byId("nav-export")).click();
  const target = await byId("export-target");
  const values = await attrs('[data-testid="export-target"] option', "value");
  const sweepTarget = values.find((v) => v.startsWith("sweep:"));
  assert.ok(sweepTarget, `a sweep to export: ${values}`);
  await target.selectByAttribute("value", sweepTarget);
  await (await byId("export-format")).selectByAttribute("value", "png");
  const file = path.join(scratch, "card.png");
  await setValue("export-path", file);
  await (await byId("card-preview", 30_000)).waitForDisplayed({ timeout: 30_000 });
  await (await byId("export-save")).click();
  const done = await byId("export-done", 60_000);
  assert.match(await done.getText(), /card\.png/);
  const bytes = fs.readFileSync(file);
  assert.deepEqual([...bytes.subarray(1, 4)], [0x50, 0x4e, 0x47], "a PNG file");
  assert.equal(bytes.readUInt32BE(16), 1200, "1200 wide");
  assert.equal(bytes.readUInt32BE(20), 630, "630 high");
  await shot("export");
  await browser.setWindowSize(1024, 700);
  await browser.pause(300);
  const preview = await byId("card-preview");
  const w = await browser.execute((el) => el.getBoundingClientRect().width, preview);
  assert.ok(w >= 600, `the card preview is ${w} px wide at 1024×700`);
  await shot("export-1024");
  await browser.setWindowSize(1280, 820);
  // No text on the card is cut: every line fits, wrapped where it must.
  await (await byId("export-format")).selectByAttribute("value", "svg");
  const svgFile = path.join(scratch, "card.svg");
  await setValue("export-path", svgFile);
  await (await byId("export-save")).click();
  await browser.waitUntil(async () => /card\.svg/.test(await (await byId("export-done")).getText()), {
    timeout: 60_000,
    timeoutMsg: "the SVG card was not saved",
  });
  const cut = [...fs.readFileSync(svgFile, "utf8").matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]).filter((t) => t.includes("…"));
  assert.deepEqual(cut, [], "text cut on the card");
});

test("a benchmark timed while other programs are busy is marked disturbed in the list, never a plain ok", async () => {
  // Real contention: one busy loop per core for the length of the run.
  const burners = os.cpus().map(() => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  let status;
  try {
    status = await runSweep({ kind: "files", files: [SMOL], prompt: 32, gen: 16, reps: 2 });
  } finally {
    for (const b of burners) b.kill("SIGKILL");
  }
  assert.match(status, /^done/, `status: ${status}`);
  await (await byId("nav-results")).click();
  const back = await browser.$('[data-testid="results-back"]');
  if (await back.isExisting()) await back.click();
  // The newest run's row: its status says disturbed, and so do its figures.
  await browser.waitUntil(async () => (await browser.$$('[data-testid="results-row"]')).length > 0, { timeout: 30_000 });
  const runRow = await browser.$('[data-testid="results-row"]:not([data-target^="sweep"]):not([data-target^="serve"])');
  const badge = await runRow.$('[data-testid="results-status-badge"]');
  assert.equal(await badge.getText(), "disturbed", `the newest run's status: ${await runRow.getText()}`);
  assert.match(await badge.getAttribute("title"), /disturbed: .*(pp32|tg16)/);
  assert.ok((await runRow.$$('[data-testid="results-disturbed-mark"]')).length >= 1, "a disturbed figure carries its mark");
  // The status filter offers it.
  const options = await attrs('[data-testid="results-status"] option', "value");
  assert.ok(options.includes("disturbed"), `status filter: ${options}`);
  await shot("results-disturbed");
  await shotsAtSizes("results-disturbed");
  await (await runRow.$('[data-testid="results-open"]')).click();
  assert.equal(await (await byId("run-status-badge", 30_000)).getText(), "disturbed");
  const flagged = await texts('[data-testid="disturbed-notes"] li strong');
  assert.ok(flagged.length >= 1, "the notes name the disturbed tests");
  // Measured again, on a quiet machine: exactly the flagged tests, as a run
  // of its own, followed on the Benchmark page; the first run is kept.
  await (await byId("measure-again")).click();
  const again = await byId("sweep-status");
  await browser.waitUntil(async () => /done|failed|cancelled/.test(await again.getText()), {
    timeout: 120_000,
    interval: 500,
    timeoutMsg: "measuring the disturbed tests again did not end in 2 minutes",
  });
  assert.match(await again.getText(), /^done/);
  const cells = await texts('[data-testid="bench-result"] [data-testid="run-detail"] tbody tr td:first-child');
  const measured = cells.map((t) => t.replace("disturbed", "").trim()).filter(Boolean);
  assert.deepEqual([...measured].sort(), [...flagged].sort(), `measured again: ${cells}`);
  await shot("measured-again");
  await shotsAtSizes("measured-again", "bench-result");
  await (await byId("nav-results")).click();
});

test("a corrupt model file shows a readable error, and a good one after it leaves nothing stale", async () => {
  const bad = path.join(scratch, "corrupt.gguf");
  fs.writeFileSync(bad, Buffer.from("this is not a GGUF file at all, only text"));
  // It must end, and end as failed: a hang or a "done" is a defect too.
  const status = await runSweep({ kind: "from", base: bad, levels: "" });
  assert.match(status, /failed/, `status: ${status}`);
  const err = await byId("error", 60_000);
  const text = await err.getText();
  assert.match(text, /corrupt\.gguf/, `the error names the file: ${text}`);
  assert.match(text, /GGUF/i, `the error says what is wrong: ${text}`);
  assert.doesNotMatch(text, /panick|undefined|\[object/i, text);
  await shot("error");
  // Then a good model, one file: the error, the failed level and the old
  // telemetry go, and its result is one benchmark, not a sweep.
  const listed = () => browser.execute(() => window.__TAURI_INTERNALS__.invoke("result_list", { limit: 100000 }));
  const rowsBefore = await listed();
  const again = await runSweep({ kind: "files", files: [SMOL] });
  assert.match(again, /^done/, `status: ${again}`);
  assert.equal((await browser.$$('[data-testid="error"]')).length, 0, "no error left from the failed run");
  const levels = await attrs('[data-testid="sweep-level"]', "data-status");
  assert.deepEqual(levels, ["ok"], `the level list holds only this run: ${levels}`);
  assert.equal((await browser.$$('[data-testid="telemetry-waiting"]')).length, 0, "no stale 'waiting for telemetry'");
  await byId("bench-result", 30_000);
  assert.equal((await browser.$$('[data-testid="sweep-detail"]')).length, 0, "one file is a benchmark, not a sweep of one level");
  // One result in the Results list for it: its run, and no sweep row beside it.
  const rowsAfter = await listed();
  const added = rowsAfter.filter((r) => !rowsBefore.some((b) => b.target === r.target));
  assert.deepEqual(added.map((r) => r.kind), ["run"], `rows added: ${JSON.stringify(added.map((r) => r.target))}`);
  await shot("after-error");
});

test("the clock ticks while a test is timed, and cancel stops a running benchmark and leaves no worker behind", async () => {
  await (await byId("nav-sweep")).click();
  await (await byId("sweep-source-kind")).selectByAttribute("value", "files");
  await setValue("sweep-files", SMOL);
  // Long enough to be mid-measurement when Cancel is pressed.
  await (await byId("sweep-preset")).selectByAttribute("value", "custom");
  await setValue("sweep-prompt", 512);
  await setValue("sweep-gen", 256);
  await setValue("sweep-reps", 10);
  // One file without quality: one benchmark (the form says so).
  const quality = await byId("sweep-quality");
  if (await quality.isSelected()) await quality.click();
  await byId("sweep-one-benchmark");
  await (await byId("sweep-run")).click();
  const worker = () => spawnSync("pgrep", ["-f", "dyno-app worker"]).stdout.toString().trim();
  await browser.waitUntil(async () => worker() !== "", {
    timeout: 30_000,
    interval: 200,
    timeoutMsg: "no worker started",
  });
  // Inside one timed test (its phase line unchanged), the elapsed time moves.
  const phase = await byId("sweep-phase", 30_000);
  await browser.waitUntil(async () => /timing tg256/.test(await phase.getText()), {
    timeout: 120_000,
    interval: 200,
    timeoutMsg: "tg256 was never timed",
  });
  const before = [await phase.getText(), await (await byId("sweep-elapsed")).getText()];
  await browser.pause(3000);
  const after = [await phase.getText(), await (await byId("sweep-elapsed")).getText()];
  assert.equal(after[0], before[0], "still the same timed test");
  assert.ok(await (await byId("sweep-quiet")).isExisting(), "the view says the test is being timed");
  assert.notEqual(after[1], before[1], `the clock stood still while tg256 was timed: ${before[1]}`);
  await shot("clock-ticks");
  // The form as one benchmark, and its progress, at a small laptop's window and at full HD.
  await shotsAtSizes("one-benchmark", "sweep-one-benchmark");
  await (await byId("sweep-cancel")).click();
  const status = await byId("sweep-status");
  await browser.waitUntil(async () => /cancelled/.test(await status.getText()), {
    timeout: 30_000,
    timeoutMsg: "the benchmark did not say cancelled",
  });
  await browser.waitUntil(async () => worker() === "", {
    timeout: 10_000,
    interval: 200,
    timeoutMsg: "a worker outlived the cancel",
  });
  await shot("cancelled");
  await shotsAtSizes("cancelled", "sweep-status");
});

// The database the app wrote is a real, intact SQLite file.
test("a running llama-server is benchmarked from the Servers view, per request and in total", async () => {
  const url = process.env.E2E_SERVE_URL;
  assert.ok(url, "E2E_SERVE_URL must name the llama-server scripts/test/e2e.sh started");
  await (await byId("nav-servers")).click();
  await setValue("serve-url", url);
  await setValue("serve-prompt", "32");
  await setValue("serve-gen", "8");
  await setValue("serve-concurrency", "1,2");
  await setValue("serve-requests", "2");
  await (await byId("serve-run")).click();
  const table = await byId("serve-table", 180_000);
  const rows = await table.$$("tbody tr");
  const cells = [];
  for (const r of rows) cells.push(await r.getText());
  assert.ok(cells.some((t) => t.includes("pp32+tg8 @d0 c1") && t.includes("2/2")), cells.join("\n"));
  assert.ok(cells.some((t) => t.includes("pp32+tg8 @d0 c2") && t.includes("2/2")), cells.join("\n"));
  // Per request against total, on one chart; TTFT percentiles on another.
  await byId("serve-concurrency-chart");
  await byId("serve-ttft-chart");
  // TTFT is a client's: the view says what opening a connection cost.
  const connect = await (await byId("serve-connect")).getText();
  assert.match(connect, /Each TTFT includes opening a connection: \d+\.\d\d ms \(TCP; median of 5 fresh connections\)/);
  const listed = await (await byId("serve-runs")).getText();
  assert.match(listed, /llama-server/);
  await shot("servers");
  // Readable at the smallest and a large window size too.
  await shotsAtSizes("servers");
  // A bad list is refused in the form, before anything is sent.
  await setValue("serve-concurrency", "1,x");
  await (await byId("serve-run")).click();
  assert.match(await (await byId("serve-form-error")).getText(), /'x' is not a whole number/);
});

test("server runs are results: listed, opened, compared with each other and drawn as a card", async () => {
  // A second server run (the first is the test above's), at concurrency 1.
  await (await byId("nav-servers")).click();
  await setValue("serve-prompt", "32");
  await setValue("serve-gen", "8");
  await setValue("serve-concurrency", "1");
  await setValue("serve-requests", "2");
  await (await byId("serve-run")).click();
  await browser.waitUntil(async () => (await (await byId("serve-result")).getText()).match(/Server run \d+ · ok/) && (await (await byId("serve-runs")).$$("tbody tr")).length >= 2, {
    timeout: 180_000,
    timeoutMsg: "the second server run did not finish",
  });

  await (await byId("nav-results")).click();
  await (await byId("results-kind")).selectByAttribute("value", "serve");
  await browser.waitUntil(async () => (await browser.$$('[data-testid="results-row"]')).length === 2, {
    timeout: 30_000,
    timeoutMsg: "the Results list did not show the two server runs",
  });
  const rowText = await (await browser.$('[data-testid="results-row"]')).getText();
  assert.match(rowText, /server run \d+/, rowText);
  assert.match(rowText, /via llama-server/, rowText);
  await (await browser.$('[data-testid="results-open"]')).click();
  const opened = await (await byId("serve-table", 30_000)).getText();
  assert.match(opened, /pp32\+tg8 @d0 c1/, opened);
  await shot("results-serve");
  await (await byId("results-back")).click();
  await (await byId("results-kind")).selectByAttribute("value", "");

  await (await byId("results-tab-compare")).click();
  const served = (await attrs('[data-testid="compare-a"] option', "value")).filter((v) => v.startsWith("serve:"));
  assert.ok(served.length >= 2, `server runs to compare: ${served}`);
  await (await byId("compare-a")).selectByAttribute("value", served[1]);
  // Once A is a server run, B offers the other server runs only (never A).
  const offered = (await attrs('[data-testid="compare-b"] option', "value")).filter(Boolean);
  assert.ok(offered.length >= 1 && offered.every((v) => v.startsWith("serve:")) && !offered.includes(served[1]), `B offers ${offered}`);
  await (await byId("compare-b")).selectByAttribute("value", served[0]);
  await (await byId("compare-run")).click();
  const table = await (await byId("compare-table", 30_000)).getText();
  assert.match(table, /ttft/, table);
  assert.match(table, / ms/, table);
  assert.match(table, /decode_total/, table);
  await shot("compare-serve");

  await (await byId("nav-export")).click();
  await (await byId("export-target")).selectByAttribute("value", served[0]);
  const formats = await attrs('[data-testid="export-format"] option', "value");
  assert.ok(!formats.includes("llama-bench-json"), `a server run has no llama-bench form: ${formats}`);
  await (await byId("card-preview", 30_000)).waitForDisplayed({ timeout: 30_000 });
  await shot("export-serve");
});

test("a sustained decode runs from the Benchmark form and charts its rate over time", async () => {
  await (await byId("nav-sweep")).click();
  await (await byId("sweep-source-kind")).selectByAttribute("value", "files");
  await setValue("sweep-files", SMOL);
  await (await byId("sweep-preset")).selectByAttribute("value", "sustained");
  await setValue("sweep-sustain", "0.25");
  const cool = await byId("sweep-cooldown");
  if (!(await cool.isSelected())) await cool.click();
  // One file without quality: a benchmark, measured anew (no resume box).
  const quality = await byId("sweep-quality");
  if (await quality.isSelected()) await quality.click();
  await byId("sweep-one-benchmark");
  // The form itself, with its GPU and expert placement fields, as a
  // newcomer sees it at a small laptop's window and at full HD.
  await shotsAtSizes("benchmark-form", "sweep-ncmoe");
  await (await byId("sweep-run")).click();
  const status = await byId("sweep-status");
  await browser.waitUntil(async () => /done|failed|cancelled/.test(await status.getText()), {
    timeout: 180_000,
    interval: 500,
    timeoutMsg: "the sustained run did not end in 3 minutes",
  });
  assert.match(await status.getText(), /done/);
  const box = await byId("sustain", 30_000);
  await box.scrollIntoView();
  const summary = await (await byId("sustain-summary")).getText();
  assert.match(summary, /^burst \d+\.\d t\/s \(first \d+ s\) → sustained \d+\.\d t\/s/, summary);
  assert.ok(await (await byId("sustain-chart")).$("svg").isExisting(), "the rate is charted");
  await browser.pause(300);
  await shot("sustained");
  // Readable at a small laptop's window and at full HD.
  await shotsAtSizes("sustained", "sustain");
});

// A team store on a real PostgreSQL server (TLS, password auth), set up by
// scripts/test/e2e.sh with a second machine's runs already pushed by the CLI.
const TEAM_URL = process.env.E2E_TEAM_URL;

test("a team URL with nothing listening fails at once, says so, and offers Try again", async () => {
  // A port that was free a moment ago: nothing listens there.
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  await (await byId("nav-team")).click();
  assert.ok(await (await byId("team-no-server")).isExisting(), "the view says how a team gets a server");
  await setValue("team-url", `postgres://dyno@127.0.0.1:${port}/dyno`);
  const t0 = Date.now();
  await (await byId("team-sync-now")).click();
  // Polled every 50 ms, so the time measured is the app's, not the poll's.
  await browser.waitUntil(
    async () => {
      const e = await browser.$('[data-testid="error"]');
      return (await e.isExisting()) && /nothing is listening/.test(await e.getText());
    },
    { timeout: 10_000, interval: 50 },
  );
  const took = Date.now() - t0;
  const err = await byId("error");
  assert.match(await err.getText(), new RegExp(`127\\.0\\.0\\.1:${port}`));
  assert.ok(took < 2_000, `the refusal took ${took} ms`);
  assert.ok(await (await byId("team-sync-retry")).isExisting(), "Try again is offered");
  await shot("team-refused");
  await setValue("team-url", "");
});

test(
  "the Team view saves the store without its password, syncs, and ranks this machine against another",
  { skip: TEAM_URL ? false : "E2E_TEAM_URL is not set (scripts/test/e2e.sh needs DYNO_TEST_PG_URL)" },
  async () => {
    // Typed as a person would: the URL without the password, the password apart.
    const u = new URL(TEAM_URL);
    const password = decodeURIComponent(u.password);
    assert.ok(password.length >= 8, "the test server has a password");
    u.password = "";
    const bare = u.toString();
    assert.ok(!bare.includes(password), bare);
    const noPassword = async (where) => {
      assert.ok(!(await browser.$("body").getText()).includes(password), `the password is in the page text ${where}`);
      assert.ok(!(await browser.getPageSource()).includes(password), `the password is in the page's HTML ${where}`);
    };

    await (await byId("nav-team")).click();
    const machine = await (await byId("team-machine", 30_000)).getText();
    assert.match(machine, /^\S+$/, "this machine's id is shown");
    await setValue("team-url", bare);
    await setValue("team-password", password);
    await (await byId("team-save")).click();
    const saved = await byId("team-saved-url");
    await browser.waitUntil(async () => (await saved.getText()) === bare, {
      timeout: 10_000,
      timeoutMsg: `the saved URL is not ${bare}`,
    });
    const unsynced = await (await byId("team-unsynced")).getText();
    const [, toPush] = unsynced.match(/^(\d+) runs? not yet synced$/) ?? [];
    assert.ok(Number(toPush) >= 1, `runs measured earlier wait to be pushed: '${unsynced}'`);
    await noPassword("after Save");

    const t0 = Date.now();
    const telemetry = await byId("team-telemetry");
    if (!(await telemetry.isSelected())) await telemetry.click();
    await (await byId("team-sync-now")).click();
    const summary = await byId("team-sync-summary", 120_000);
    const text = await summary.getText();
    const m = text.match(/^Pushed (\d+) runs? \((\d+) already there\) in .*; pulled (\d+) runs? of other machines; the store holds (\d+) runs? from (\d+) machines?\.$/);
    assert.ok(m, `the summary: '${text}'`);
    const [pushed, already, pulled, teamRuns, teamMachines] = m.slice(1).map(Number);
    assert.ok(pushed >= 1, text);
    assert.equal(already, 0, text);
    assert.equal(pulled, 4, `the other machine's four runs come here: ${text}`);
    assert.equal(teamMachines, 2, text);
    assert.equal(teamRuns, pushed + 4, text);
    console.log(`team sync: ${text} (${((Date.now() - t0) / 1000).toFixed(1)} s with the ranking)`);
    // Everything measured here is in the store now; pulled runs are never pushed back.
    await browser.waitUntil(async () => (await (await byId("team-unsynced")).getText()) === "0 runs not yet synced", {
      timeout: 10_000,
      timeoutMsg: "runs are still counted as not synced",
    });
    assert.notEqual(await (await byId("team-last-sync")).getText(), "never");

    // The ranking loads after the sync: SmolLM2 Q4_1, measured on both machines.
    await browser.waitUntil(async () => (await browser.$$('[data-testid="team-row"]')).length >= 2, {
      timeout: 30_000,
      timeoutMsg: "the machines table did not list two machines",
    });
    const level = await byId("team-level");
    const picked = await level.getValue();
    const pickedText = await (await level.$(`option[value="${picked}"]`)).getText();
    assert.match(pickedText, /^SmolLM2-135M-Instruct\.Q4_1\.gguf Q4_1 — 2 machines$/, pickedText);
    const ids = await attrs('[data-testid="team-row"]', "data-machine");
    assert.deepEqual([...ids].sort(), [machine, "e2e-other"].sort(), `machines ranked: ${ids}`);
    for (const row of await browser.$$('[data-testid="team-row"]')) {
      const decode = await (await row.$('[data-testid="team-decode"]')).getText();
      assert.match(decode, /^[\d,]+\.\d+$/, `a decode figure in t/s: '${decode}'`);
      // Each machine's figures come from one setup, named.
      const setup = await (await row.$('[data-testid="team-setup"]')).getText();
      assert.match(setup, /^CPU, \d+ threads?$/, `the setup measured: '${setup}'`);
    }
    assert.match(await (await byId("team-setup-rule")).getText(), /^Figures are each machine at one setup: /);
    const shares = await Promise.all([...(await browser.$$('[data-testid="team-share"]'))].map((e) => e.getText()));
    assert.equal(shares[0], "100%", `the first machine is the best: ${shares}`);
    assert.match(await (await byId("team-median")).getText(), /^Team median: decode [\d,.]+ t\/s · prefill [\d,.]+ t\/s$/);
    await noPassword("after the sync");
    // Nothing Dyno wrote holds the password: the saved URL is stripped.
    for (const f of fs.readdirSync(path.dirname(db))) {
      const p = path.join(path.dirname(db), f);
      if (fs.statSync(p).isFile()) assert.ok(!fs.readFileSync(p).includes(password), `the password is in ${p}`);
    }
    await shot("team");
    // The page never scrolls sideways; the table may, inside its card.
    for (const [w, h] of [[1024, 700], [1920, 1080]]) {
      await browser.setWindowSize(w, h);
      await browser.pause(300);
      const overflow = await browser.execute(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window at ${w}×${h}`);
      if (w === 1024) await (await byId("team-table")).scrollIntoView();
      await shot(`team-${w}`);
    }
    await browser.setWindowSize(1280, 820);

    // A run's card set against the team's median: the preview, and the file.
    await (await byId("nav-export")).click();
    await byId("export-target", 30_000);
    // Read in the page: WebDriver gives the text of a closed select's other options as "".
    const options = await browser.execute(() =>
      [...document.querySelectorAll('[data-testid="export-target"] option')].map((o) => [o.value, o.textContent]),
    );
    // The Quick-preset run of the first journey (pp128, tg32), the first
    // run with both: the sizes the other machine ran too, so the card has a
    // median to show. Asked of the database, as the labels do not name the
    // sizes.
    const q = spawnSync("python3", [
      "-c",
      "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(\"select min(r.id) from runs r join results x on x.run_id = r.id where r.status = 'ok' and r.pulled_from is null and x.test = 'tg32' and exists (select 1 from results y where y.run_id = r.id and y.test = 'pp128')\").fetchone()[0]; print(r or '')",
      db,
    ]);
    const standard = q.stdout.toString().trim();
    const run = options.find(([value, label]) => value === standard && /\bQ4_1 · ok$/.test(label))?.[0];
    assert.ok(run, `the Quick run ${standard} (${q.stderr}) among: ${options.map(([v, l]) => `${v} ${l}`).join("; ")}`);
    await (await byId("export-target")).selectByAttribute("value", run);
    await (await byId("export-format")).selectByAttribute("value", "svg");
    const box = await byId("export-vs-team");
    if (!(await box.isSelected())) await box.click();
    await byId("export-vs-team-note");
    await (await byId("card-preview", 60_000)).waitForDisplayed({ timeout: 60_000 });
    const file = path.join(scratch, "team-card.svg");
    await setValue("export-path", file);
    await (await byId("export-save")).click();
    await byId("export-done", 60_000);
    const svg = fs.readFileSync(file, "utf8");
    assert.match(svg, /VS TEAM \(2 MACHINES\)/);
    assert.match(svg, /decode tg32 median [\d,.]+ t\/s/);
    assert.match(svg, /prefill pp128 median [\d,.]+ t\/s/);
    assert.ok(!svg.includes(password), "the card holds no password");
    await noPassword("in Export");
    // Wide enough for the card beside the form, its VS TEAM block in view.
    await browser.setWindowSize(1920, 1080);
    await browser.pause(300);
    await shot("export-team");
    await browser.setWindowSize(1280, 820);
  },
);

test("Settings lend this machine over RPC, and a benchmark splits its layers onto that server", async () => {
  // A free port on 127.0.0.1, as a person would pick one.
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  const endpoint = `127.0.0.1:${port}`;
  // The About box names the llama.cpp build and its modules, RPC among them.
  await (await browser.$('[data-testid="about-build"] summary')).click();
  const about = await byId("about-build-text", 60_000);
  const aboutText = await about.getText();
  assert.match(aboutText, /llama\.cpp: llama-cpp-sys-2 /);
  assert.match(aboutText, /libggml-rpc\.so \(RPC\): loaded/);
  assert.match(aboutText, /libggml-cpu\.so \(CPU\): loaded/);
  await shot("about-build");
  await (await byId("nav-settings")).click();
  await setValue("rpc-port", port);
  await (await byId("rpc-start")).click();
  const serving = await byId("rpc-serving", 30_000);
  assert.equal(await (await byId("rpc-endpoint")).getText(), endpoint);
  assert.match(await serving.getText(), /CPU/, "it says which device it lends");
  await shot("settings-rpc");
  await shotsAtSizes("settings-rpc", "rpc-serving");
  const status = await runSweep({ kind: "files", files: [SMOL], prompt: 16, gen: 4, reps: 1, rpc: endpoint });
  assert.match(status, /done/, status);
  const body = await browser.$("body").getText();
  assert.ok(body.includes(`RPC server ${endpoint}`), "the result names the server its layers ran on");
  assert.match(body, /layers offloaded/);
  await shot("benchmark-rpc");
  await browser.setWindowSize(1024, 700);
  await browser.pause(300);
  await (await byId("sweep-rpc")).scrollIntoView();
  await shot("benchmark-rpc-1024");
  await browser.setWindowSize(1280, 820);
  // Stopped from the page: the port is free again.
  await (await byId("nav-settings")).click();
  await (await byId("rpc-stop")).click();
  await byId("rpc-start");
  await browser.waitUntil(
    () =>
      new Promise((resolve) => {
        const c = net.connect(port, "127.0.0.1");
        c.on("connect", () => (c.destroy(), resolve(false)));
        c.on("error", () => resolve(true));
      }),
    { timeout: 10_000, timeoutMsg: "the RPC server still listens after Stop serving" },
  );
});

test("the app's database passes an integrity check", () => {
  const r = spawnSync("python3", [
    "-c",
    "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('pragma integrity_check').fetchone()[0])",
    db,
  ]);
  assert.equal(r.stdout.toString().trim(), "ok", r.stderr.toString());
});
