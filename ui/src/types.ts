// Shapes of the JSON the backend returns. They are generated from the Rust
// types with ts-rs (ui/src/bindings/, never edited by hand; docs/app-api.md
// says how to regenerate them) and re-exported here under the names the UI
// uses, so a field the backend renames fails `npm run check` instead of a
// view. A figure that could not be measured is null, never 0.
//
// Only what the backend has no type for is written here: the UI's own
// unions and the error shape api.ts normalises rejections to. The command
// names, export formats and error codes are generated too
// (bindings/contract.ts), so api.ts cannot call a command the app lacks.

export type {
  AppInfo,
  ErrorCode,
  RunStatus,
  TestKind,
  CompareDoc,
  CompareTest,
  CompareUnmatched,
  ExportWritten,
  Device,
  Discarded,
  Fit,
  Hardware,
  HubCheck,
  HubFile,
  HubLevel,
  HubListing,
  HubRepo,
  HubSettings,
  JobEvent,
  LocalModel,
  Machine,
  ModelInfo,
  ModelPlace,
  Offload,
  OffloadSeries,
  PlaceAdded,
  Preset,
  PresetEstimate,
  PullResult,
  Quality,
  ResultListRow,
  Target,
  TargetKind,
  ResultTelemetry,
  RpcServing,
  Run,
  RunConfig,
  RunsDoc,
  RunTimeline,
  RunTelemetry,
  Percentiles,
  ConnectCost,
  EngineComparison,
  ServeInput,
  ServeOutcome,
  ServeReport,
  ServeResult,
  ServerRunItem,
  SettingSource,
  Stats,
  Sustained,
  CooldownRecord,
  Disturbance,
  PowerState,
  SweepDoc,
  SweepInfo,
  SweepInput,
  BenchForm,
  SweepLevel,
  SweepSource,
  TestResult,
  WhatThisMeans,
  AccuracyReport,
  Advice,
  Basis,
  PredictedFile,
  PredictedLevel,
  PredictedRate,
  Prediction,
  PredictInput,
  PredictOutcome,
  RunPrediction,
  SynthInput,
  SynthOptions,
  SynthOutcome,
  SynthShape,
  SyncProgress,
  SyncReport,
  SyncRequest,
  TeamMachineRank,
  TeamModelLevel,
  TeamQuery,
  TeamRanking,
  TeamStatus,
} from "./bindings";

/** A llama.cpp device, as each result document lists the machine's GPUs. */
export type { Device as GpuInfo } from "./bindings";

export type { Command, ExportFormat } from "./bindings/contract";
import type { ErrorCode } from "./bindings";
import type { ExportFormat } from "./bindings/contract";
/** The formats `export_text` returns as text (every format but the pictures). */
export type TextFormat = Exclude<ExportFormat, "png" | "svg">;

/** Every rejected command is normalised to this shape by api.ts. */
export interface ApiError {
  code: ErrorCode | string;
  message: string;
}
