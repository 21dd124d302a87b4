// The team store this session knows, and its sync in flight.

import * as api from "../api";
import { columnValues, initialSync, levelKey, levelQuery, reduceSync, splitPassword, withPassword, type SyncState } from "../lib/team";
import type { ApiError, SyncProgress, SyncReport, TeamQuery, TeamRanking, TeamStatus } from "../types";
import { Job } from "./job.svelte";

/**
 * The team store as this session knows it: the URL typed or saved, the
 * password typed (held here, in memory, for this session only: never saved,
 * never sent to a command that keeps it), the sync in flight and the machines
 * ranking with its filters. App-wide so the Export view can set a card
 * against the team, and a sync keeps going, and reporting, while the person
 * looks elsewhere.
 */
class TeamState {
  /** The store's URL as typed, without a password. */
  url = $state("");
  password = $state("");
  status = $state.raw<TeamStatus | null>(null);
  statusError = $state.raw<ApiError | null>(null);
  saving = $state(false);
  /** The sync in flight: its id, its end and Cancel (stores/job.svelte.ts). */
  readonly syncJob = new Job<SyncProgress, SyncReport>("sync");
  progress = $state.raw<SyncState>(initialSync());
  report = $state.raw<SyncReport | null>(null);
  syncError = $state.raw<ApiError | null>(null);
  ranking = $state.raw<TeamRanking | null>(null);
  rankingError = $state.raw<ApiError | null>(null);
  rankingLoading = $state(false);
  /** The model and level ranked (levelKey), "" for the one most machines measured. */
  pick = $state("");
  backend = $state("");
  version = $state("");
  /** Every backend and Dyno version seen in a ranking this session: the filters' options. */
  backends = $state.raw<string[]>([]);
  versions = $state.raw<string[]>([]);
  /** Bumped by each ranking request, so only the newest answer is shown. */
  private asked = 0;

  get syncing(): boolean {
    return this.syncJob.running;
  }

  /** The person cancelled the last sync (its progress bars stay, showing how far it got). */
  get syncCancelled(): boolean {
    return this.syncJob.cancelled;
  }

  /** The URL commands connect with: the typed password set in it. */
  get connectUrl(): string {
    return withPassword(this.url, this.password);
  }

  /**
   * The saved settings. The first answer fills an empty URL field with the
   * URL in force: DYNO_TEAM_URL wins over the saved one, as on the command
   * line (its password, hidden by the backend, is not carried over).
   */
  async loadStatus(): Promise<void> {
    try {
      const s = await api.teamStatus();
      this.statusError = null;
      if (!this.status && !this.url.trim()) {
        this.url = s.env_url ? splitPassword(s.env_url).url : (s.saved_url ?? "");
      }
      this.status = s;
    } catch (e) {
      this.statusError = e as ApiError;
    }
  }

  /** Save the typed URL without its password; an empty field forgets the saved one. */
  async save(): Promise<void> {
    this.moveTypedPassword();
    this.saving = true;
    this.statusError = null;
    try {
      this.status = await api.saveTeamUrl(this.url.trim());
      if (this.status.saved_url) this.url = this.status.saved_url;
    } catch (e) {
      this.statusError = e as ApiError;
    } finally {
      this.saving = false;
    }
  }

  /** Push and pull; on success the machines ranking loads from the store just synced. */
  async sync(withTelemetry: boolean): Promise<void> {
    if (this.syncing) return;
    this.moveTypedPassword();
    this.report = null;
    this.progress = initialSync();
    if (!this.url.trim()) {
      this.syncError = { code: "bad_input", message: "Type the team store's URL first: postgres://USER@HOST:PORT/DATABASE." };
      return;
    }
    this.syncError = null;
    const request = { url: this.connectUrl, with_telemetry: withTelemetry, push_only: false };
    const ended = await this.syncJob.run(
      (jobId, on) => api.teamSync(request, jobId, on),
      (p) => (this.progress = reduceSync(this.progress, p)),
    );
    if (ended.ok) this.report = ended.value;
    else if (ended.error.code !== "cancelled") this.syncError = ended.error;
    // What is left to push changed.
    this.loadStatus();
    if (this.report) await this.loadRanking();
  }

  /** Stop the running sync after the batch in flight; what the store committed is kept. */
  async cancelSync(): Promise<void> {
    const failed = await this.syncJob.cancel();
    if (failed) this.syncError = failed;
  }

  /** The machines ranking for the picked level and filters. */
  async loadRanking(): Promise<void> {
    this.moveTypedPassword();
    if (!this.url.trim()) {
      this.rankingError = { code: "bad_input", message: "Type the team store's URL first: postgres://USER@HOST:PORT/DATABASE." };
      return;
    }
    const asked = ++this.asked;
    this.rankingLoading = true;
    this.rankingError = null;
    const query: TeamQuery = { ...levelQuery(this.pick), backend: this.backend || null, dyno_version: this.version || null };
    try {
      const r = await api.teamMachines(this.connectUrl, query);
      if (asked !== this.asked) return;
      this.ranking = r;
      if (r.level) this.pick = levelKey(r.level);
      this.backends = columnValues(r.machines, "backends", this.backends);
      this.versions = columnValues(r.machines, "dyno_versions", this.versions);
    } catch (e) {
      if (asked === this.asked) this.rankingError = e as ApiError;
    } finally {
      if (asked === this.asked) this.rankingLoading = false;
    }
  }

  /**
   * A password typed into the URL field goes to the password field (unless
   * one is typed there already) before the URL is used or saved, so the page
   * never shows it again.
   */
  private moveTypedPassword() {
    const { url, password } = splitPassword(this.url);
    if (!password) return;
    this.url = url;
    if (!this.password) this.password = password;
  }
}

export const team = new TeamState();
