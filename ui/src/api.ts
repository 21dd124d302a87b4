// The only module that talks to the backend (docs/app-api.md). Each function
// is a thin typed wrapper over one Tauri command; nothing else in the UI
// imports @tauri-apps/api/core.

import { Channel, invoke } from "@tauri-apps/api/core";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { open as openDialog, save as saveDialog } from "@tauri-apps/plugin-dialog";
import { ERROR_CODES } from "./bindings/contract";
import type {
  AccuracyReport,
  ApiError,
  AppInfo,
  Command,
  CompareDoc,
  Discarded,
  ExportFormat,
  ExportWritten,
  Hardware,
  HubCheck,
  HubListing,
  HubRepo,
  HubSettings,
  RpcServing,
  JobEvent,
  LocalModel,
  ModelPlace,
  PlaceAdded,
  PowerState,
  PredictedFile,
  PredictInput,
  PredictOutcome,
  SynthInput,
  SynthOptions,
  SynthOutcome,
  PresetEstimate,
  PullResult,
  ResultListRow,
  Target,
  RunTimeline,
  ServeInput,
  ServeOutcome,
  ServeReport,
  ServerRunItem,
  RunsDoc,
  SweepDoc,
  SweepInput,
  BenchForm,
  SyncProgress,
  SyncReport,
  SyncRequest,
  TeamQuery,
  TeamRanking,
  TeamStatus,
  TextFormat,
} from "./types";

export type { ApiError, JobEvent } from "./types";

const KNOWN_CODES = new Set<string>(ERROR_CODES);

/**
 * Turn whatever a rejected command gave into `{code, message}`. The backend
 * sends that shape already; a string, an Error (IPC failure) or anything else
 * becomes `internal` with the best readable message we can find.
 */
export function toApiError(e: unknown): ApiError {
  if (e && typeof e === "object" && !Array.isArray(e)) {
    const o = e as Record<string, unknown>;
    if (typeof o.message === "string" && o.message.length > 0) {
      const code = typeof o.code === "string" && o.code.length > 0 ? o.code : "internal";
      return { code: KNOWN_CODES.has(code) ? code : "internal", message: o.message };
    }
  }
  if (typeof e === "string" && e.length > 0) {
    // A JSON string holding the error (some IPC paths serialise twice).
    try {
      const parsed: unknown = JSON.parse(e);
      if (parsed && typeof parsed === "object") return toApiError(parsed);
    } catch {
      /* a plain message */
    }
    return { code: "internal", message: e };
  }
  if (e instanceof Error) return { code: "internal", message: e.message || String(e) };
  let text: string;
  try {
    text = JSON.stringify(e) ?? String(e);
  } catch {
    text = String(e);
  }
  return { code: "internal", message: `Unexpected error from the backend: ${text}` };
}

/**
 * Whether the page runs inside the Dyno app (and so has a backend): the IPC
 * bridge `invoke` needs is there (Tauri's test mocks install it too).
 */
export function hasBackend(): boolean {
  return typeof window !== "undefined" && "__TAURI_INTERNALS__" in window;
}

async function call<T>(cmd: Command, args?: Record<string, unknown>): Promise<T> {
  if (!hasBackend()) {
    throw {
      code: "internal",
      message: "No backend: this page is not running inside the Dyno app. Start it with `cargo tauri dev`.",
    } satisfies ApiError;
  }
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw toApiError(e);
  }
}

/** A job id unique enough for one session's jobs. */
export function newJobId(prefix = "job"): string {
  const rnd =
    typeof crypto !== "undefined" && "randomUUID" in crypto
      ? crypto.randomUUID()
      : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  return `${prefix}-${rnd}`;
}

function channel(onEvent: (e: JobEvent) => void): Channel<JobEvent> {
  const ch = new Channel<JobEvent>();
  ch.onmessage = onEvent;
  return ch;
}

// Read-only commands

export const hw = () => call<Hardware>("hw");
export const power = () => call<PowerState>("power");
export const runs = (limit?: number) => call<RunsDoc>("runs", limit === undefined ? {} : { limit });
export const run = (id: number) => call<RunsDoc>("run", { id });
/**
 * Light list rows of runs and sweeps together, newest first: what the Results
 * list, Export and Compare pickers need, without the full documents. `limit`
 * (backend default 1000) caps the runs; every sweep is listed.
 */
export const resultList = (limit?: number) =>
  call<ResultListRow[]>("result_list", limit === undefined ? {} : { limit });
export const sweeps = () => call<SweepDoc[]>("sweeps");
export const sweep = (id: number) => call<SweepDoc>("sweep", { id });
/** Each run's stored telemetry over time, thinned for a chart. */
export const telemetry = (runIds: number[]) => call<RunTimeline[]>("telemetry", { runIds });
export const models = () => call<LocalModel[]>("models");
/** The folders and single files the person added to the places searched. */
export const modelPlaces = () => call<ModelPlace[]>("model_places");
/** Add a folder to search, or one .gguf file; refused with a reason if unreadable. */
export const addModelPlace = (path: string) => call<PlaceAdded>("add_model_place", { path });
export const removeModelPlace = (path: string) => call<boolean>("remove_model_place", { path });
/** Quick, Standard and Thorough for the model at `path`: tests and a time estimate each. */
export const presetEstimates = (path: string) => call<PresetEstimate[]>("preset_estimates", { path });
export const hubSearch = (query: string) => call<HubRepo[]>("hub_search", { query });
export const hubLevels = (repo: string) => call<HubListing>("hub_levels", { repo });
/**
 * Predicted prefill, decode, memory fit and quality on this machine for a
 * GGUF path or a hub repo (`OWNER/NAME[:LEVEL]`, headers only), with the
 * advised level: `dyno predict TARGET --json`.
 */
export const predict = (input: PredictInput) => call<PredictOutcome>("predict", { input });
/**
 * "Synthetic model…": a file's header, resized to a shape and typed as a
 * level if asked, written with synthetic weights, or only described with
 * `dry_run`: `dyno synth --like FILE --shape S --type T [-o OUT] [--dry-run]`.
 * Bytes written arrive as `QuantizeProgress`; `cancel(jobId)` stops it.
 */
export function synthFile(input: SynthInput, jobId: string, onEvent: (e: JobEvent) => void) {
  return call<SynthOutcome>("synth_file", { input, jobId, onEvent: channel(onEvent) });
}
/** The named shapes and the levels "Synthetic model…" offers, and the shapes the built-in header writes. */
export const synthOptions = () => call<SynthOptions>("synth_options");
/** The name `dyno synth` would give this synthetic model: what "Save as…" offers. */
export const synthName = (input: SynthInput) => call<string>("synth_name", { input });
/** Predictions for files on disk, one calibration for them all (the Models list). */
export const predictFiles = (paths: string[]) => call<PredictedFile[]>("predict_files", { paths });
/** Past predictions against what the runs measured: `dyno predict --accuracy --json`. */
export const predictAccuracy = () => call<AccuracyReport>("predict_accuracy");
/** Two runs, two sweeps or two server runs side by side. */
export const compare = (a: Target, b: Target) => call<CompareDoc>("compare", { a, b });
/**
 * The result card as SVG text. With `vsTeam` (a team store URL, its password
 * in it when typed) a run's card shows the team's median beside its figures;
 * a sweep's is refused.
 */
export const cardSvg = (target: Target, vsTeam?: string | null) =>
  call<string>("card_svg", vsTeam ? { target, vsTeam } : { target });
export const appInfo = () => call<AppInfo>("app_info");
/** What `dyno --version` prints: the version, the llama.cpp build, each backend module loaded or why not. */
export const versionText = () => call<string>("version_text");

// Jobs: each resolves when the job ends and streams its progress to onEvent.

export function startSweep(spec: SweepInput, jobId: string, onEvent: (e: JobEvent) => void) {
  return call<SweepDoc>("start_sweep", { spec, jobId, onEvent: channel(onEvent) });
}

/** One benchmark (a preset on one file, or a run's disturbed tests again): its runs, never a sweep. */
export function startBench(form: BenchForm, jobId: string, onEvent: (e: JobEvent) => void) {
  return call<RunsDoc>("start_bench", { form, jobId, onEvent: channel(onEvent) });
}

/** Benchmark a running server (and the same model in-process, with `input.engine`). */
export function startServeBench(input: ServeInput, jobId: string, onEvent: (e: JobEvent) => void) {
  return call<ServeOutcome>("start_serve_bench", { input, jobId, onEvent: channel(onEvent) });
}
export const serveRuns = () => call<ServerRunItem[]>("serve_runs");
export const serveRun = (id: number) => call<ServeReport>("serve_run", { id });

export function hubPull(repo: string, file: string, jobId: string, onEvent: (e: JobEvent) => void) {
  return call<PullResult>("hub_pull", { repo, file, jobId, onEvent: channel(onEvent) });
}

/**
 * Write an export. Refused with code "exists" when the file is there and
 * `overwrite` is not set: the caller asks the person first.
 */
export const exportCard = (target: Target, format: ExportFormat, path: string, overwrite = false, vsTeam?: string | null) =>
  call<ExportWritten>("export_card", vsTeam ? { target, format, path, overwrite, vsTeam } : { target, format, path, overwrite });

// Native dialogs (tauri-plugin-dialog). Each resolves to the picked path, or
// null when the person closed the dialog. Outside the app there is no dialog:
// they resolve to null and the typed-path fields remain.

async function dialog<T>(f: () => Promise<T>): Promise<T | null> {
  if (!hasBackend()) return null;
  try {
    return await f();
  } catch (e) {
    throw toApiError(e);
  }
}

/** "Add a folder…": a folder that holds GGUF files. */
export const pickFolder = () =>
  dialog(async () => (await openDialog({ directory: true, multiple: false, title: "Add a folder of GGUF models" })) as string | null);

/** "Open a GGUF…": one or more model files. */
export const pickModelFiles = () =>
  dialog(async () => {
    const r = await openDialog({
      multiple: true,
      title: "Open GGUF models",
      filters: [{ name: "GGUF models", extensions: ["gguf"] }],
    });
    return r === null ? null : Array.isArray(r) ? r : [r];
  });

/** "Open a GGUF…": the one model file a server runs. */
export const pickModelFile = () =>
  dialog(async () => {
    const r = await openDialog({
      multiple: false,
      title: "The GGUF file the server runs",
      filters: [{ name: "GGUF models", extensions: ["gguf"] }],
    });
    return Array.isArray(r) ? (r[0] ?? null) : r;
  });

/** "Trust a certificate…": a PEM file of the authority that signed an https server's certificate. */
export const pickCertificateFile = () =>
  dialog(async () => {
    const r = await openDialog({
      multiple: false,
      title: "The certificate authority to trust (PEM)",
      filters: [{ name: "PEM certificates", extensions: ["pem", "crt", "cer"] }],
    });
    return Array.isArray(r) ? (r[0] ?? null) : r;
  });

/** "Choose…": the GGUF file (or `.gguf-header`) whose header a synthetic model takes. */
export const pickTemplateFile = () =>
  dialog(async () => {
    const r = await openDialog({
      multiple: false,
      title: "The GGUF whose header the synthetic model takes",
      filters: [{ name: "GGUF models and headers", extensions: ["gguf", "gguf-header"] }],
    });
    return Array.isArray(r) ? (r[0] ?? null) : r;
  });

/** "Save as…": where a synthetic model goes; the dialog asks before replacing a file. */
export const pickSynthPath = (defaultPath: string) =>
  dialog(() => saveDialog({ defaultPath, title: "Write the synthetic model to", filters: [{ name: "GGUF models", extensions: ["gguf"] }] }));

/** "Save…": where an export goes; the dialog itself asks before replacing a file. */
export const pickSavePath = (defaultPath: string, name: string, extension: string) =>
  dialog(() => saveDialog({ defaultPath, title: "Save the export", filters: [{ name, extensions: [extension] }] }));

/**
 * Files dropped on the window: `onDrop` gets their paths, `onHover` whether
 * something is being dragged over. Resolves to the function that stops
 * listening. Outside the app nothing is ever dropped.
 */
export async function onFileDrop(onDrop: (paths: string[]) => void, onHover: (over: boolean) => void): Promise<() => void> {
  if (!hasBackend()) return () => {};
  return getCurrentWebview().onDragDropEvent((e) => {
    const p = e.payload;
    if (p.type === "enter" || p.type === "over") onHover(true);
    else if (p.type === "leave") onHover(false);
    else if (p.type === "drop") {
      onHover(false);
      onDrop(p.paths);
    }
  });
}

/** An export as text (the backend's own exporter, scrubbed of paths), for Copy. */
export const exportText = (target: Target, format: TextFormat) => call<string>("export_text", { target, format });

/** Stop a job; resolves true if one was running. */
export const cancel = (jobId: string) => call<boolean>("cancel", { jobId });

// Settings (the hub endpoint and token) and discarding a cancelled download.

export const hubSettings = () => call<HubSettings>("hub_settings");
/** Save the hub endpoint; null or "" goes back to huggingface.co. */
export const setHubEndpoint = (url: string | null) => call<HubSettings>("set_hub_endpoint", { url });
/** Save a token to huggingface_hub's token file; the answer shows it masked only. */
export const saveHubToken = (token: string) => call<HubSettings>("save_hub_token", { token });
export const removeHubToken = () => call<HubSettings>("remove_hub_token");
/** Reach the hub with the settings in force; a failure is an answer, not a rejection. */
export const checkHub = () => call<HubCheck>("check_hub");
/** Delete what a cancelled download of `file` left in the cache. */
export const discardDownload = (repo: string, file: string) => call<Discarded>("discard_download", { repo, file });

// This machine's devices lent over llama.cpp's RPC (`dyno rpc-server`, run
// by the app as a child process that dies with it).

/** Start serving at HOST:PORT; the server already running at that address is returned as it is. */
export const rpcServerStart = (host: string, port: number, threads: number | null) =>
  call<RpcServing>("rpc_server_start", { host, port, threads });
/** Stop it; resolves true if one was running. */
export const rpcServerStop = () => call<boolean>("rpc_server_stop");
/** The server running now, or null. */
export const rpcServerStatus = () => call<RpcServing | null>("rpc_server_status");

// The team store (a PostgreSQL database the team shares). A URL passed here
// may hold the password typed for this session; save_team_url is the only
// command that keeps a URL, and it strips the password first.

/** The saved URL, DYNO_TEAM_URL if set, this machine's id and what is left to sync. */
export const teamStatus = () => call<TeamStatus>("team_status");
/** Save the store's URL (without its password); "" forgets it. */
export const saveTeamUrl = (url: string) => call<TeamStatus>("save_team_url", { url });
/** Push this machine's runs and pull the others', streaming the progress. */
/** A sync is stopped between batches by `cancel(jobId)`. */
export function teamSync(request: SyncRequest, jobId: string, onProgress: (p: SyncProgress) => void) {
  const ch = new Channel<SyncProgress>();
  ch.onmessage = onProgress;
  return call<SyncReport>("team_sync", { request, jobId, onProgress: ch });
}
/** Machines ranked by decode, then prefill, on one model and level of the store at `url`. */
export const teamMachines = (url: string, query: TeamQuery) => call<TeamRanking>("team_machines", { url, query });
