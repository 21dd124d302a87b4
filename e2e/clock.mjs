// A benchmark of the real app, not a test: what the Benchmark view's clock
// costs while a test is timed. Run by `bash scripts/test/e2e.sh clock`.
//
// The view ticks its elapsed time and ETA once a second, during a timed test
// too (ui/src/stores/sweep.svelte.ts); everything else waits for the test's
// end. Every CPU second the app's own processes (the app and its WebKit
// processes, not the worker) use while llama.cpp is timed is taken from the
// figure on a machine whose cores llama.cpp fills. This reads that CPU time
// from /proc over a window wholly inside one timed decode test (the phase
// line is the same at both ends), and over a window of the same length with
// the app idle on the same view, and prints both as a share of one core.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { remote } from "webdriverio";

const PORT = Number(process.env.TAURI_DRIVER_PORT ?? 4444);
const SMOL = path.join(process.env.DYNO_TEST_MODELS ?? "", "SmolLM2-135M-Instruct.Q4_1.gguf");
const ROUNDS = Number(process.env.CLOCK_ROUNDS ?? 3);
const WINDOW_S = Number(process.env.CLOCK_WINDOW_S ?? 15);
const TICK_HZ = Number(spawnSync("getconf", ["CLK_TCK"]).stdout.toString().trim() || 100);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The app's own processes by part: the app (its backend, which also reads
 * telemetry and the worker's events, as the CLI's parent does) and the
 * webview (WebKit's web and network processes, which draw the page).
 */
function appPids() {
  const parts = { app: [], webview: [] };
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (argv.length === 1 && path.basename(argv[0]) === "dyno-app") parts.app.push(pid);
      else if (/WebKit(Web|Network)Process/.test(argv[0] ?? "")) parts.webview.push(pid);
    } catch {
      /* gone */
    }
  }
  return parts;
}

/** CPU seconds (user and system, every thread) used so far by `pids`. */
function cpuSeconds(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* gone */
    }
  }
  return ticks / TICK_HZ;
}

/** Share of one core each part of the app used over `seconds` from now, with no WebDriver call in between. */
async function share(seconds) {
  const parts = appPids();
  const c0 = Object.fromEntries(Object.entries(parts).map(([k, pids]) => [k, cpuSeconds(pids)]));
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const wall = (performance.now() - t0) / 1000;
  return Object.fromEntries(Object.entries(parts).map(([k, pids]) => [k, (cpuSeconds(pids) - c0[k]) / wall]));
}

const pct = (x) => `${(100 * x).toFixed(2)}%`;
const parts = (s) => `app ${pct(s.app)}, webview ${pct(s.webview)}`;

const b = await remote({
  hostname: "127.0.0.1",
  port: PORT,
  logLevel: "error",
  capabilities: { "tauri:options": { application: process.env.DYNO_APP } },
});
const byId = async (id, timeout = 30_000) => {
  const el = await b.$(`[data-testid="${id}"]`);
  await el.waitForExist({ timeout });
  return el;
};
await byId("hw-cpu", 60_000);
await (await byId("nav-sweep")).click();
await (await byId("sweep-source-kind")).selectByAttribute("value", "files");
await (await byId("sweep-preset")).selectByAttribute("value", "custom");
// One decode test long enough for the window: 512 tokens, 5 repetitions.
for (const [id, v] of [["sweep-files", SMOL], ["sweep-prompt", 0], ["sweep-gen", 512], ["sweep-reps", 5]]) {
  const el = await byId(id);
  await el.clearValue();
  await el.setValue(String(v));
}
const quality = await byId("sweep-quality");
if (await quality.isSelected()) await quality.click();
await sleep(3000);

const idle = [];
const timed = [];
for (let round = 0; round < ROUNDS; round++) {
  idle.push(await share(WINDOW_S));
  await (await byId("sweep-run")).click();
  const phase = await byId("sweep-phase", 60_000);
  let line = "";
  const deadline = Date.now() + 120_000;
  while (!/timing tg512/.test(line) && Date.now() < deadline) {
    await sleep(500);
    line = await phase.getText().catch(() => "");
  }
  if (!/timing tg512/.test(line)) throw new Error(`tg512 was never timed: '${line}'`);
  const clock0 = await (await byId("sweep-elapsed")).getText();
  const s = await share(WINDOW_S);
  const lineAfter = await phase.getText();
  const clock1 = await (await byId("sweep-elapsed")).getText();
  if (lineAfter !== line) throw new Error(`the window left the timed test: '${line}' then '${lineAfter}'; raise the reps or lower CLOCK_WINDOW_S`);
  timed.push(s);
  console.log(`round ${round + 1}: idle ${parts(idle.at(-1))} of a core; while tg512 was timed ${parts(s)} (clock ${clock0} → ${clock1})`);
  await (await byId("sweep-cancel")).click();
  const status = await byId("sweep-status");
  await b.waitUntil(async () => /cancelled|done|failed/.test(await status.getText()), { timeout: 60_000, interval: 1000 });
  await sleep(3000);
}
await b.deleteSession();
const med = (xs) => ({ app: median(xs.map((x) => x.app)), webview: median(xs.map((x) => x.webview)) });
console.log(
  `the app's own CPU, as a share of one core (${WINDOW_S} s windows, median of ${ROUNDS}): ` +
    `idle on the Benchmark view: ${parts(med(idle))}; while a test is timed, the clock ticking: ${parts(med(timed))}`,
);
