// App-wide state that outlives a view: which view is shown, and what a view
// keeps for when it is opened again. The jobs in flight, and the lists the
// views share, are each a store of their own in stores/.

import type { SweepInput, Target } from "./types";

export type View = "overview" | "models" | "sweep" | "results" | "servers" | "team" | "export" | "settings";

class Nav {
  view = $state<View>("overview");
  /** The run ("12") or sweep ("sweep:3") the Results view opens, if any. */
  resultsTarget = $state<Target | null>(null);
  exportTarget = $state<Target | null>(null);
  /** A hub search the Models view runs when it opens (the first-run card's suggestion). */
  hubQuery = $state<string | null>(null);
  /** A source the Sweep form should start from (set by Models). */
  sweepPrefill = $state.raw<SweepInput | null>(null);

  /** Open a view at its top: the page's scroll belongs to the view left behind. */
  go(view: View) {
    if (view !== this.view && typeof document !== "undefined") document.scrollingElement?.scrollTo?.(0, 0);
    // "Results" in the nav is the list, not the detail opened last time.
    if (view === "results") this.resultsTarget = null;
    this.view = view;
  }
  openResult(target: Target) {
    if (typeof document !== "undefined") document.scrollingElement?.scrollTo?.(0, 0);
    this.resultsTarget = target;
    this.view = "results";
  }
}

export const nav = new Nav();

/**
 * The Servers view's form and last result, kept while the app runs so that
 * leaving the view and coming back finds them as they were (the API key
 * too, in memory only: it is never saved).
 */
export const serveMemory: { form: Record<string, unknown> | null; outcome: unknown; shown: unknown } = {
  form: null,
  outcome: null,
  shown: null,
};
