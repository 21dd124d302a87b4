// A Svelte action for wide tables: when the table is wider than its box
// (a 1,024-pixel window and a sweep with quality columns), the box says so
// and shows which side hides columns, instead of hiding them silently.

/** Which sides of a scrolled box hide content. */
export function hiddenSides(scrollLeft: number, clientWidth: number, scrollWidth: number): { left: boolean; right: boolean } {
  const more = scrollWidth - clientWidth;
  if (more <= 1) return { left: false, right: false };
  return { left: scrollLeft > 1, right: scrollLeft < more - 1 };
}

export function overflowHint(node: HTMLElement) {
  const update = () => {
    const s = hiddenSides(node.scrollLeft, node.clientWidth, node.scrollWidth);
    node.classList.toggle("hides-left", s.left);
    node.classList.toggle("hides-right", s.right);
    node.dataset.hidden = s.left || s.right ? "more columns: scroll sideways" : "";
  };
  const ro = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(update);
  ro?.observe(node);
  if (node.firstElementChild) ro?.observe(node.firstElementChild);
  node.addEventListener("scroll", update, { passive: true });
  update();
  return {
    destroy() {
      ro?.disconnect();
      node.removeEventListener("scroll", update);
    },
  };
}
