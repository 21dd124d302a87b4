// The Pareto frontier of a two-objective choice: the points that no other
// point beats on both axes at once. For a sweep that is "no other level
// decodes faster at a lower KLD" (or a smaller size).

/**
 * Items on the frontier that minimises `x` and maximises `y`, sorted by x.
 * Items whose x or y is missing are left out. A point equal to a frontier
 * point on both axes is kept too (it is not beaten).
 */
export function paretoFrontier<T>(items: readonly T[], x: (t: T) => number | null, y: (t: T) => number | null): T[] {
  const pts = items
    .map((item) => ({ item, x: x(item), y: y(item) }))
    .filter((p): p is { item: T; x: number; y: number } => Number.isFinite(p.x) && Number.isFinite(p.y));
  // Smaller x first; at equal x the larger y first, so it dominates the rest.
  pts.sort((a, b) => a.x - b.x || b.y - a.y);
  const out: T[] = [];
  let bestY = -Infinity;
  let last: { x: number; y: number } | null = null;
  for (const p of pts) {
    if (p.y > bestY) {
      out.push(p.item);
      bestY = p.y;
      last = p;
    } else if (last && p.x === last.x && p.y === last.y) {
      out.push(p.item);
    }
  }
  return out;
}
