import { describe, expect, it } from "vitest";
import {
  barWidth,
  columnValues,
  encodePassword,
  fmtTtft,
  initialSync,
  isTeamUrl,
  levelKey,
  levelOptions,
  levelQuery,
  medianLine,
  reduceSync,
  runsCell,
  shareOfBest,
  sortMachines,
  splitPassword,
  syncNotes,
  syncSummary,
  withPassword,
} from "./team";
import type { SyncReport, TeamMachineRank, TeamModelLevel } from "../types";

describe("withPassword", () => {
  it("sets the password after the user", () => {
    expect(withPassword("postgres://alice@db.lan:5432/dyno", "s3cret")).toBe("postgres://alice:s3cret@db.lan:5432/dyno");
  });
  it("gives a URL without a user an empty one, which means the default user", () => {
    expect(withPassword("postgres://db.lan/dyno", "pw")).toBe("postgres://:pw@db.lan/dyno");
    expect(withPassword("postgresql://127.0.0.1:6543/team", "pw")).toBe("postgresql://:pw@127.0.0.1:6543/team");
  });
  it("keeps the port, the query and the fragment", () => {
    expect(withPassword("postgres://bob@h:5433/dyno?sslmode=require&application_name=dyno", "pw")).toBe(
      "postgres://bob:pw@h:5433/dyno?sslmode=require&application_name=dyno",
    );
    expect(withPassword("postgres://bob@h?sslmode=verify-full", "pw")).toBe("postgres://bob:pw@h?sslmode=verify-full");
    expect(withPassword("postgres://bob@h/dyno#x", "pw")).toBe("postgres://bob:pw@h/dyno#x");
  });
  it("replaces a password already in the URL", () => {
    expect(withPassword("postgres://bob:old@h/dyno", "new")).toBe("postgres://bob:new@h/dyno");
  });
  it("percent-encodes every character that could end or change the userinfo", () => {
    const pw = "p@ss:w/o?r#d%&=+ !'()*é";
    const url = withPassword("postgres://bob@h/dyno", pw);
    expect(url).toBe(`postgres://bob:${encodePassword(pw)}@h/dyno`);
    expect(encodePassword(pw)).not.toMatch(/[@:/?#&=+ !'()*]/);
    // Read back as a parser does: one @, the host intact, the password exact.
    expect(url.match(/@/g)!.length).toBe(1);
    expect(splitPassword(url)).toEqual({ url: "postgres://bob@h/dyno", password: pw });
  });
  it("leaves the URL alone without a password, or without a host to log in to", () => {
    expect(withPassword(" postgres://bob@h/dyno ", "")).toBe("postgres://bob@h/dyno");
    expect(withPassword("sqlite:///tmp/team.db", "pw")).toBe("sqlite:///tmp/team.db");
    expect(withPassword("not a url", "pw")).toBe("not a url");
  });
  it("keeps a user name that holds an encoded @", () => {
    expect(withPassword("postgres://me%40corp@h/dyno", "pw")).toBe("postgres://me%40corp:pw@h/dyno");
  });
});

describe("splitPassword", () => {
  it("takes the password out and decodes it", () => {
    expect(splitPassword("postgres://bob:p%40ss@h:5432/dyno?sslmode=require")).toEqual({
      url: "postgres://bob@h:5432/dyno?sslmode=require",
      password: "p@ss",
    });
    expect(splitPassword("postgres://:pw@h/dyno")).toEqual({ url: "postgres://h/dyno", password: "pw" });
  });
  it("returns a URL without a password as it is", () => {
    expect(splitPassword("postgres://bob@h/dyno")).toEqual({ url: "postgres://bob@h/dyno", password: "" });
    expect(splitPassword("postgres://h/dyno")).toEqual({ url: "postgres://h/dyno", password: "" });
    expect(splitPassword("")).toEqual({ url: "", password: "" });
  });
  it("keeps a password that is not valid percent-encoding as typed", () => {
    expect(splitPassword("postgres://bob:100%@h/dyno").password).toBe("100%");
  });
});

it("recognises the team store URLs the backend accepts", () => {
  expect(isTeamUrl("postgres://h/dyno")).toBe(true);
  expect(isTeamUrl("PostgreSQL://h/dyno")).toBe(true);
  expect(isTeamUrl("sqlite:///tmp/t.db")).toBe(true);
  expect(isTeamUrl("http://h/dyno")).toBe(false);
  expect(isTeamUrl("db.lan:5432")).toBe(false);
});

const report = (over: Partial<SyncReport> = {}): SyncReport => ({
  store: "postgres://bob@h/dyno",
  machine: "abc",
  pushed: 12,
  already_there: 3,
  telemetry_pushed: 0,
  pulled: 4,
  left_running: 0,
  skipped: 0,
  skipped_runs: [],
  team_runs: 30,
  team_machines: 3,
  push_bytes: 600_000,
  push_seconds: 1.5,
  pull_seconds: 0.2,
  tls_warning: null,
  ...over,
});

describe("sync", () => {
  it("follows the phases", () => {
    let s = reduceSync(initialSync(), { phase: "connected", store: "postgres://bob@h/dyno", schema_version: 1 });
    s = reduceSync(s, { phase: "pushing", done: 0, total: 400 });
    s = reduceSync(s, { phase: "pushing", done: 200, total: 400 });
    expect(s).toEqual({ store: "postgres://bob@h/dyno", push: { done: 200, total: 400 }, pull: null });
    s = reduceSync(s, { phase: "pulling", done: 0, total: 5 });
    expect(s.pull).toEqual({ done: 0, total: 5 });
    expect(s.push).toEqual({ done: 200, total: 400 });
  });

  it("sums a sync up in one sentence, with the rates of what was sent", () => {
    expect(syncSummary(report())).toBe(
      "Pushed 12 runs (3 already there) in 1.50 s — 10.0 runs/s, 0.40 MB/s; pulled 4 runs of other machines; the store holds 30 runs from 3 machines.",
    );
    expect(syncSummary(report({ pushed: 1, already_there: 0, pulled: 1, team_runs: 1, team_machines: 1, push_seconds: 0 }))).toBe(
      "Pushed 1 run (0 already there) in 0.00 s — – runs/s, – MB/s; pulled 1 run of other machines; the store holds 1 run from 1 machine.",
    );
    // Nothing sent: no rate to speak of.
    expect(syncSummary(report({ pushed: 0, already_there: 0, push_bytes: 0 }))).toMatch(/^Pushed 0 runs \(0 already there\) in 1\.50 s; pulled/);
  });

  it("notes telemetry sent and runs left for later", () => {
    expect(syncNotes(report())).toEqual([]);
    expect(syncNotes(report({ telemetry_pushed: 2, left_running: 1 }))).toEqual([
      "2 telemetry series sent.",
      "1 run still being measured, left for the next sync.",
    ]);
  });

  it("puts the warning about a password sent without TLS first", () => {
    const w = "the password goes to db.lab with sslmode=prefer; add ?sslmode=require";
    expect(syncNotes(report({ tls_warning: w, left_running: 1 }))).toEqual([w, "1 run still being measured, left for the next sync."]);
  });

  it("names a run the pull skipped and why", () => {
    const reason = "test tg128 has kind 'vision', which this Dyno does not know";
    expect(syncNotes(report({ skipped: 2, skipped_runs: [{ uid: "0123456789abcdef", reason }] }))).toEqual([
      `2 runs of other machines skipped: this Dyno cannot read them (update Dyno; the next sync tries again). 0123456789ab: ${reason}`,
    ]);
  });
});

const level = (sha: string, quant: string, machines: number): TeamModelLevel => ({
  model_sha256: sha, file_name: `m-${quant}.gguf`, name: "M", quant, machines, runs: machines * 2,
});

describe("the level picker", () => {
  it("lists each model and level with its machines, in the backend's order", () => {
    expect(levelOptions([level("aa", "Q4_1", 2), level("bb", "Q8_0", 1)])).toEqual([
      { value: "aa|Q4_1", label: "m-Q4_1.gguf Q4_1 — 2 machines" },
      { value: "bb|Q8_0", label: "m-Q8_0.gguf Q8_0 — 1 machine" },
    ]);
  });
  it("turns its value back into the backend's filters", () => {
    expect(levelQuery(levelKey(level("aa", "Q4_K_M", 1)))).toEqual({ model: "aa", quant: "Q4_K_M" });
    expect(levelQuery("")).toEqual({ model: null, quant: null });
  });
});

const rank = (r: number, machine: string, decode: number | null, prefill: number | null, ttft: number | null, over: Partial<TeamMachineRank> = {}): TeamMachineRank => ({
  rank: r, machine, cpu: "cpu", cores: 8, memory_bytes: 2 ** 34, gpus: null, backends: "CPU", dyno_versions: "0.1.0", threads: "8",
  setup: "CPU, 8 threads", runs: 2, other_setup_runs: 0, disturbed_runs: 0, decode_tps: decode, prefill_tps: prefill, ttft_ms: ttft, decode_vs_best: decode === null ? null : decode / 40,
  ...over,
});

describe("the machines table", () => {
  const rows = [
    rank(1, "a", 40, 300, 90),
    rank(2, "b", 30, 500, 40),
    rank(3, "c", 20, null, 200),
    rank(4, "d", null, 100, null),
  ];
  const order = (by: Parameters<typeof sortMachines>[1]) => sortMachines(rows, by).map((r) => r.machine);

  it("sorts best first: decode and prefill high, TTFT low, missing figures last", () => {
    expect(order("rank")).toEqual(["a", "b", "c", "d"]);
    expect(order("decode")).toEqual(["a", "b", "c", "d"]);
    expect(order("prefill")).toEqual(["b", "a", "d", "c"]);
    expect(order("ttft")).toEqual(["b", "a", "c", "d"]);
    // The rows given are not reordered in place.
    expect(rows.map((r) => r.machine)).toEqual(["a", "b", "c", "d"]);
  });

  it("breaks ties by rank", () => {
    const tied = [rank(2, "y", 10, 5, 1), rank(1, "x", 10, 5, 1)];
    expect(sortMachines(tied, "decode").map((r) => r.machine)).toEqual(["x", "y"]);
    expect(sortMachines(tied, "ttft").map((r) => r.machine)).toEqual(["x", "y"]);
  });

  it("collects the backends and versions offered as filters, keeping those known", () => {
    const mixed = [rank(1, "a", 1, 1, 1, { backends: "CPU, CUDA", dyno_versions: "0.2.0" }), rank(2, "b", 1, 1, 1, { backends: "Vulkan", dyno_versions: "0.10.0, 0.2.0" })];
    expect(columnValues(mixed, "backends")).toEqual(["CPU", "CUDA", "Vulkan"]);
    expect(columnValues(mixed, "dyno_versions", ["0.1.0"])).toEqual(["0.1.0", "0.2.0", "0.10.0"]);
    expect(columnValues([], "backends", ["Metal"])).toEqual(["Metal"]);
  });

  it("formats runs, the share of the best and its bar", () => {
    expect(runsCell(rows[0])).toBe("2");
    expect(runsCell(rank(1, "a", 1, 1, 1, { runs: 3, disturbed_runs: 1 }))).toBe("3 (+1 busy)");
    expect(shareOfBest(rows[0])).toBe("100%");
    expect(shareOfBest(rows[2])).toBe("50.0%");
    expect(shareOfBest(rows[3])).toBe("–");
    expect(barWidth(rows[1])).toBe(75);
    expect(barWidth(rows[3])).toBe(0);
    expect(barWidth(rank(1, "a", 1, 1, 1, { decode_vs_best: 1.2 }))).toBe(100);
  });

  it("keeps decode and prefill apart in the median, and TTFT in ms", () => {
    expect(medianLine(61.23, 410.5)).toBe("Team median: decode 61.23 t/s · prefill 410.5 t/s");
    expect(medianLine(null, null)).toBe("Team median: decode – · prefill –");
    expect(fmtTtft(42.345)).toBe("42.3");
    expect(fmtTtft(1234.4)).toBe("1234");
    expect(fmtTtft(null)).toBe("–");
  });
});
