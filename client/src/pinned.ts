import { type RefObject, useCallback, useEffect, useMemo, useRef } from 'react';

/** Within this many pixels of the end, the reader is at the newest Message (and stays there as it grows). */
const AT_END = 40;

/**
 * Keeps a scroller at its end while the reader is there: whatever makes its content taller (a reply streaming
 * in, rows measured by the virtualizer, a picture or code block laid out late) scrolls it down again. Scrolling
 * up lets go; scrolling back to the end holds again. Watches sizes (ResizeObserver) rather than renders, so it
 * does not matter which render or which late layout made the content grow.
 */
export function usePinnedToBottom(ref: RefObject<HTMLElement | null>) {
  const pinned = useRef(true);
  const toEnd = useCallback(() => {
    const el = ref.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [ref]);

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const grew = new ResizeObserver(() => toEnd());
    grew.observe(el);
    for (const child of el.children) grew.observe(child);
    // Children come and go (the "load earlier" button): each is watched while it is there.
    const children = new MutationObserver((changes) => {
      for (const change of changes)
        for (const node of change.addedNodes) if (node instanceof Element) grew.observe(node);
    });
    children.observe(el, { childList: true });
    const onScroll = () => {
      pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < AT_END;
    };
    // A wheel or key upwards lets go at once, before the scroll it causes (a reply growing in the same frame
    // would otherwise pull the reader back down).
    const onWheel = (e: WheelEvent) => {
      if (e.deltaY < 0) pinned.current = false;
    };
    const onKey = (e: KeyboardEvent) => {
      if (['ArrowUp', 'PageUp', 'Home'].includes(e.key)) pinned.current = false;
    };
    el.addEventListener('scroll', onScroll, { passive: true });
    el.addEventListener('wheel', onWheel, { passive: true });
    el.addEventListener('keydown', onKey);
    toEnd();
    return () => {
      grew.disconnect();
      children.disconnect();
      el.removeEventListener('scroll', onScroll);
      el.removeEventListener('wheel', onWheel);
      el.removeEventListener('keydown', onKey);
    };
  }, [ref, toEnd]);

  const pin = useCallback(() => {
    pinned.current = true;
    toEnd();
  }, [toEnd]);
  const release = useCallback(() => {
    pinned.current = false;
  }, []);
  return useMemo(
    () => ({
      /** Holds at the end again and goes there (the Player sent something). */
      pin,
      /** Lets go (a turn opened from a search result is shown where it is). */
      release,
    }),
    [pin, release],
  );
}
