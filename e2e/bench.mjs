// Benchmarks of the real app (not tests: they report, they do not assert a
// speed). Run by `bash scripts/test/e2e.sh bench`, which seeds the database with
// 1,000 runs first (scripts/bench/seed-runs.py).
//
// 1. Cold start to first paint: from asking tauri-driver for a session (which
//    starts the app process) to the first contentful paint the webview
//    reports, and to the Overview's navigation being on screen.
// 2. The Results view with 1,000 stored runs: from the click on "Results" to
//    the first frame painted after its rows are in the page, measured inside
//    the page, median of several visits. A visit shows the list it has in
//    memory (the last one, or the page prefetched after start) and fetches it
//    again behind, so the Refresh button, which starts from nothing (fetch
//    over IPC, parse, render), is timed too.

import { remote } from "webdriverio";

// How many runs the database holds, for the printed lines (E2E_BENCH_DB may
// hold another number than the default 1,000).
const STORED = process.env.E2E_BENCH_RUNS ?? "1,000";
const PORT = Number(process.env.TAURI_DRIVER_PORT ?? 4444);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const starts = [];
for (let i = 0; i < ROUNDS; i++) {
  const t0 = Date.now();
  const b = await remote({
    hostname: "127.0.0.1",
    port: PORT,
    logLevel: "error",
    capabilities: { "tauri:options": { application: process.env.DYNO_APP } },
  });
  const sessionMs = Date.now() - t0;
  await (await b.$('[data-testid="nav-overview"]')).waitForExist({ timeout: 30_000 });
  const navMs = Date.now() - t0;
  // The Overview's hardware (the `hw` command's answer) on screen.
  await (await b.$('[data-testid="hw-cpu"]')).waitForExist({ timeout: 30_000 });
  const hwMs = Date.now() - t0;
  const paint = await b.execute(() => {
    const fcp = performance.getEntriesByName("first-contentful-paint")[0];
    return { fcp: fcp ? fcp.startTime : null };
  });
  starts.push({ sessionMs, navMs, hwMs, fcpInPageMs: paint.fcp });

  if (i === 0) {
    // A person reaches for Results after reading the Overview: 1 s after its
    // hardware is shown (the app has fetched the newest page of results by
    // then, 0.5 s after start).
    await new Promise((r) => setTimeout(r, Number(process.env.BENCH_SETTLE_MS ?? 1000)));
    const visits = [];
    for (let v = 0; v < ROUNDS + 1; v++) {
      await (await b.$('[data-testid="nav-overview"]')).click();
      const ms = await b.executeAsync((done) => {
        performance.clearMarks();
        const t = performance.now();
        const at = (name) => performance.getEntriesByName(name, "mark")[0]?.startTime ?? NaN;
        const finish = () => {
          // Rows are in the page: what follows is waiting for the next frame.
          const seen = performance.now();
          requestAnimationFrame(() => {
            const end = performance.now();
            const fs = at("results:fetch-start");
            const fe = at("results:fetch-end");
            done({ total: end - t, mount: fs - t, fetch: fe - fs, draw: end - fe, toFrame: end - seen });
          });
        };
        const seen = () => document.querySelector('[data-testid="results-row"]');
        const obs = new MutationObserver(() => {
          if (seen()) {
            obs.disconnect();
            finish();
          }
        });
        obs.observe(document.body, { childList: true, subtree: true });
        document.querySelector('[data-testid="nav-results"]').click();
        if (seen()) {
          obs.disconnect();
          finish();
        }
      });
      const rows = (await b.$$('[data-testid="results-row"]')).length;
      visits.push({ ...ms, rows });
    }
    // The Refresh button drops the list and loads it from nothing: the path
    // of a visit with nothing cached (fetch over IPC, parse, render).
    const refreshes = [];
    for (let v = 0; v < ROUNDS; v++) {
      const button = await b.$('[data-testid="results-refresh"]');
      await b.waitUntil(() => button.isEnabled(), { timeout: 30_000 });
      refreshes.push(
        await b.executeAsync((done) => {
          performance.clearMarks();
          const t = performance.now();
          const at = (name) => performance.getEntriesByName(name, "mark")[0]?.startTime ?? NaN;
          const row = () => document.querySelector('[data-testid="results-row"]');
          let gone = false;
          const obs = new MutationObserver(() => {
            if (!row()) gone = true;
            else if (gone) {
              obs.disconnect();
              requestAnimationFrame(() => {
                const end = performance.now();
                const fs = at("results:fetch-start");
                const fe = at("results:fetch-end");
                done({ total: end - t, fetch: fe - fs, draw: end - fe });
              });
            }
          });
          obs.observe(document.body, { childList: true, subtree: true });
          document.querySelector('[data-testid="results-refresh"]').click();
        }),
      );
    }
    // The commands' own latency: each invoked from the page over Tauri's IPC
    // and timed there, round trip (app_info touches no store: the IPC's own
    // cost). Median of ROUNDS × 4 calls after one untimed call.
    const commands = [
      ["app_info", {}],
      ["model_places", {}],
      ["team_status", {}],
      ["hub_settings", {}],
      ["result_list", { limit: 50 }],
    ];
    const newest = await b.execute(() => window.__TAURI_INTERNALS__.invoke("result_list", { limit: 1 }));
    const firstRun = newest.find((r) => r.kind === "run");
    if (firstRun) commands.push(["run", { id: firstRun.id }]);
    const commandMs = {};
    for (const [cmd, args] of commands) {
      const times = await b.executeAsync(
        (cmd, args, n, done) => {
          const call = () => window.__TAURI_INTERNALS__.invoke(cmd, args);
          (async () => {
            await call();
            const ts = [];
            for (let k = 0; k < n; k++) {
              const t = performance.now();
              await call();
              ts.push(performance.now() - t);
            }
            done(ts);
          })().catch((e) => done([String(e)]));
        },
        cmd,
        args,
        ROUNDS * 4,
      );
      if (typeof times[0] === "string") throw new Error(`${cmd}: ${times[0]}`);
      commandMs[cmd] = +median(times).toFixed(1);
    }
    console.log(`commands with ${STORED} stored runs, IPC round trip (median of ${ROUNDS * 4}, ms): ${JSON.stringify(commandMs)}`);
    // Every view, from the click on its name to the first frame painted with
    // its content on screen (the Results list timed in detail above).
    const views = {
      overview: '[data-testid="hw-cpu"]',
      models: '[data-testid="model-row"], .empty',
      sweep: '[data-testid="sweep-preset"]',
      results: '[data-testid="results-row"]',
      export: '[data-testid="export-target"]',
      settings: '[data-testid="endpoint-in-force"]',
    };
    const viewMs = {};
    for (const [view, sel] of Object.entries(views)) {
      const times = [];
      for (let v = 0; v < ROUNDS; v++) {
        const other = view === "overview" ? "sweep" : "overview";
        await (await b.$(`[data-testid="nav-${other}"]`)).click();
        await b.pause(300);
        times.push(
          await b.executeAsync(
            (view, sel, done) => {
              const t = performance.now();
              const there = () => document.querySelector(sel);
              const finish = () => requestAnimationFrame(() => done(performance.now() - t));
              const obs = new MutationObserver(() => {
                if (there()) {
                  obs.disconnect();
                  finish();
                }
              });
              obs.observe(document.body, { childList: true, subtree: true });
              document.querySelector(`[data-testid="nav-${view}"]`).click();
              if (there()) {
                obs.disconnect();
                finish();
              }
            },
            view,
            sel,
          ),
        );
      }
      viewMs[view] = +median(times).toFixed(0);
    }
    console.log(`every view with ${STORED} stored runs, click to painted content (median of ${ROUNDS}, ms): ${JSON.stringify(viewMs)}`);
    console.log("results view visits (ms, rows on the page):", JSON.stringify(visits));
    console.log("results refreshes from nothing (ms):", JSON.stringify(refreshes));
    const rmed = (k) => median(refreshes.map((v) => v[k])).toFixed(0);
    console.log(
      `results refresh from nothing: median ${rmed("total")} ms (result_list for the first page ${rmed("fetch")} ms, rows to painted frame ${rmed("draw")} ms)`,
    );
    const warm = visits.slice(1);
    const med = (k) => median(warm.map((v) => v[k])).toFixed(0);
    console.log(
      `results view with ${STORED} runs: first visit ${visits[0].total.toFixed(0)} ms, median of later visits ${med("total")} ms ` +
        `(click to fetch ${med("mount")} ms, result_list ${med("fetch")} ms, rows to painted frame ${med("draw")} ms)`,
    );
  }
  await b.deleteSession();
}
console.log("starts:", JSON.stringify(starts));
console.log(
  `cold start: median ${median(starts.map((s) => s.navMs))} ms from session request to the Overview on screen ` +
    `(session ${median(starts.map((s) => s.sessionMs))} ms, hardware shown at ${median(starts.map((s) => s.hwMs))} ms); first contentful paint ${median(starts.map((s) => s.fcpInPageMs ?? NaN))} ms after navigation start`,
);

// BENCH_ONLY=ui stops here (parts 1 and 2).
if (process.env.BENCH_ONLY === "ui") process.exit(0);

// 3. Does measuring from the app disturb the figures? The same benchmark of
//    SmolLM2 from the app's Benchmark form (one file, no quality) and from
//    the CLI, alternated, with the CPU time the webview's processes used
//    during the app's run.
import { spawnSync } from "node:child_process";
import fs from "node:fs";

const SMOL = `${process.env.DYNO_TEST_MODELS}/SmolLM2-135M-Instruct.Q4_1.gguf`;
const CLI = process.env.DYNO_CLI;
const PLAN = { p: 64, n: 16, r: 3 };

/** CPU seconds used so far by the processes whose command line matches. */
function cpuSeconds(pattern) {
  let ticks = 0;
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!pattern.test(cmd)) continue;
      const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* gone */
    }
  }
  return ticks / 100;
}

function figures(doc) {
  const r = doc.runs[doc.runs.length - 1].results;
  const mean = (kind) => r.find((x) => x.kind === kind)?.mean_tokens_per_s;
  return { pp: mean("prompt"), tg: mean("gen") };
}

const b = await remote({
  hostname: "127.0.0.1",
  port: PORT,
  logLevel: "error",
  capabilities: { "tauri:options": { application: process.env.DYNO_APP } },
});
const rows = [];
const SWEEP_ROUNDS = Number(process.env.BENCH_SWEEP_ROUNDS ?? 3);
for (let round = 0; round < SWEEP_ROUNDS; round++) {
  // CLI
  const o = spawnSync(CLI, ["bench", "-p", `${PLAN.p}`, "-n", `${PLAN.n}`, "-r", `${PLAN.r}`, SMOL, "--json"], { encoding: "utf8" });
  rows.push({ from: "cli", ...figures(JSON.parse(o.stdout)) });
  // App
  await (await b.$('[data-testid="nav-sweep"]')).click();
  await (await b.$('[data-testid="sweep-source-kind"]')).selectByAttribute("value", "files");
  await (await b.$('[data-testid="sweep-preset"]')).selectByAttribute("value", "custom");
  for (const [id, v] of [["sweep-files", SMOL], ["sweep-prompt", PLAN.p], ["sweep-gen", PLAN.n], ["sweep-reps", PLAN.r]]) {
    const el = await b.$(`[data-testid="${id}"]`);
    await el.clearValue();
    await el.setValue(String(v));
  }
  const q = await b.$('[data-testid="sweep-quality"]');
  if (await q.isSelected()) await q.click();
  const web0 = cpuSeconds(/WebKit(Web|Network)Process/);
  const t0 = Date.now();
  await (await b.$('[data-testid="sweep-run"]')).click();
  // Poll rarely: WebDriver calls cost CPU too.
  const status = await b.$('[data-testid="sweep-status"]');
  await b.waitUntil(async () => /done|failed|cancelled/.test(await status.getText()), { timeout: 600_000, interval: 3000 });
  const secs = (Date.now() - t0) / 1000;
  const webCpu = cpuSeconds(/WebKit(Web|Network)Process/) - web0;
  const last = spawnSync(CLI, ["runs", "--json", "--limit", "1"], { encoding: "utf8" });
  rows.push({ from: "app", ...figures(JSON.parse(last.stdout)), webview_cpu_s: +webCpu.toFixed(2), wall_s: +secs.toFixed(1), started_at_ms: t0 });
}
await b.deleteSession();
console.log("app against CLI, same sweep (pp64, tg16, r3), alternated:");
for (const r of rows) console.log(JSON.stringify(r));
const ratio = (k) => {
  const rs = [];
  for (let i = 0; i + 1 < rows.length; i += 2) rs.push(rows[i + 1][k] / rows[i][k]);
  return `${(100 * median(rs)).toFixed(0)}% (${rs.map((x) => `${(100 * x).toFixed(0)}%`).join(", ")})`;
};
console.log(`app as a share of the CLI, median of ${SWEEP_ROUNDS} rounds: prefill ${ratio("pp")}, decode ${ratio("tg")}`);
