// Markdown for the clipboard (Export → Copy). The backend's `export_card`
// writes files; copying needs the text in the page, so this builds a short
// summary from the same JSON. It names models by file name only: no paths,
// user or host names, as the backend's exports.

import type { Machine, Run, RunsDoc, SweepDoc } from "../types";
import { runConditions, sharedConditions } from "./conditions";
import { fmtBandwidth, fmtBytes, fmtMeanSd, fmtMs, fmtPct, fmtSig } from "./format";
import { meaningOf } from "./meaning";
import { levelRows } from "./sweepData";

const esc = (s: string) => s.replace(/\|/g, "\\|");

function machineLine(m: Machine): string {
  return `${m.cpu}, ${m.cores} cores, ${fmtBytes(m.memory_bytes)} RAM, bandwidth ${fmtBandwidth(m.memory_bandwidth_bytes_per_s)}, ${m.backend}`;
}

function runTable(run: Run): string[] {
  const lines = ["| test | rate | t/s (mean ± sd) | TTFT |", "| --- | --- | ---: | ---: |"];
  for (const r of run.results) {
    const status = r.status === "ok" ? "" : ` (${r.status})`;
    lines.push(
      `| ${esc(r.test)}${status} | ${r.rate} | ${fmtMeanSd(r.mean_tokens_per_s, r.stddev_tokens_per_s, "")} | ${fmtMs(r.ttft_ms)} |`,
    );
    if (r.kind === "prompt_gen" && r.prefill_tokens_per_s) {
      const p = r.prefill_tokens_per_s;
      lines.push(`| ${esc(r.test)} | prefill | ${fmtMeanSd(p.mean, p.stddev, "")} | |`);
    }
  }
  return lines;
}

export function runMarkdown(doc: RunsDoc): string {
  const out: string[] = [];
  for (const run of doc.runs) {
    out.push(`## ${esc(run.model.file_name)} (run ${run.run_id}, ${run.status})`, "");
    out.push(`Machine: ${machineLine(doc.machine)}`, "");
    out.push(runConditions(run).map((c) => `${c.label} ${c.value}`).join(" · "), "");
    out.push(...runTable(run), "");
    const m = meaningOf(run.what_this_means);
    if (m) out.push(`What this means: ${m.sentence}`, "");
  }
  return out.join("\n");
}

export function sweepMarkdown(doc: SweepDoc): string {
  const rows = levelRows(doc);
  const out = [
    `## Sweep ${doc.sweep_id} (${doc.sweep.status})`,
    "",
    `Machine: ${machineLine(doc.machine)}`,
    "",
    sharedConditions(doc.runs).map((c) => `${c.label} ${c.value}`).join(" · "),
    "",
    "| level | size | pp t/s | tg t/s | TTFT | KLD | PPL | frontier |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: |",
  ];
  for (const r of rows) {
    if (r.status !== "ok" && !r.run) {
      out.push(`| ${esc(r.level)} | ${r.status}: ${esc(r.error ?? "")} | | | | | | |`);
      continue;
    }
    out.push(
      `| ${esc(r.level)} | ${fmtBytes(r.sizeBytes)} | ${fmtMeanSd(r.pp?.mean, r.pp?.sd, "")} | ${fmtMeanSd(r.tg?.mean, r.tg?.sd, "")} | ${fmtMs(r.ttftMs?.mean)} | ${fmtSig(r.kld)} | ${fmtSig(r.ppl, 4)} | ${r.pareto ? "★" : ""} |`,
    );
  }
  if (doc.sweep.recommendation) out.push("", `Recommendation: ${doc.sweep.recommendation}`);
  const roof = rows.find((r) => r.rooflinePct != null);
  if (roof) out.push("", `Roofline (decode, ${roof.level}): ${fmtPct(roof.rooflinePct)} of measured bandwidth`);
  return out.join("\n") + "\n";
}

/** JSON for the clipboard with absolute paths reduced to file names. */
export function shareableJson(doc: unknown): string {
  return JSON.stringify(
    doc,
    (key, value) => {
      if ((key === "path" || key === "local_path" || key === "from" || key === "dir") && typeof value === "string") {
        const parts = value.split(/[\\/]/);
        return parts[parts.length - 1];
      }
      if (key === "files" && Array.isArray(value) && value.every((v) => typeof v === "string")) {
        return value.map((v: string) => v.split(/[\\/]/).pop());
      }
      return value;
    },
    2,
  );
}
