// The Results list as last loaded, shared by the views that show it.

import * as api from "../api";
import { rowsFromList, type ResultRow } from "../lib/results";

/** Rows on one page of the Results list. */
export const RESULTS_PAGE = 50;
/** Runs asked of the backend for the whole list (every sweep is listed as well). */
const RESULTS_LIMIT = 1000;

/**
 * The Results list as last loaded, kept between visits so the view shows it
 * at once and refreshes it behind (new runs can come from the CLI too, so it
 * is always fetched again). The app fills it with the newest page shortly
 * after start. Plain fields: the view copies them into its own state.
 */
class ResultsCache {
  rows: ResultRow[] | null = null;
  /** False when `rows` is only the newest page. */
  complete = false;

  /** Bumped by `clear`, so an answer to an earlier request is not kept. */
  private generation = 0;

  /** The newest page; complete when it holds every run there is. */
  async loadFirstPage(): Promise<{ rows: ResultRow[]; complete: boolean }> {
    const asked = this.generation;
    const list = await api.resultList(RESULTS_PAGE);
    const rows = rowsFromList(list);
    const complete = list.filter((r) => r.kind === "run").length < RESULTS_PAGE;
    // A page never replaces a whole list loaded meanwhile.
    if (asked === this.generation && (!this.complete || complete)) {
      this.rows = rows;
      this.complete = complete;
    }
    return { rows, complete };
  }

  /** The whole list (up to `RESULTS_LIMIT` runs). */
  async loadAll(): Promise<ResultRow[]> {
    const asked = this.generation;
    const rows = rowsFromList(await api.resultList(RESULTS_LIMIT));
    if (asked === this.generation) {
      this.rows = rows;
      this.complete = true;
    }
    return rows;
  }

  /** Forget the list (and any answer on its way). */
  clear() {
    this.generation++;
    this.rows = null;
    this.complete = false;
  }
}

export const resultsCache = new ResultsCache();
