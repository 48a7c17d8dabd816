import { type RefObject, useCallback, useEffect, useMemo, useRef } from 'react';

/** Within this many pixels of the end, the reader is at the newest Message (and stays there as it grows). */
const AT_END = 40;
/** A scroll this soon after the reader's own input is theirs (a fling on a phone glides on for a while). */
const READER_SCROLL_MS = 2000;

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
    // Only the reader lets go: a scroll within a moment of their wheel, touch, key or scrollbar drag. The
    // virtualizer also scrolls (keeping rows in place as they are measured), and that must not let go.
    let touched = Number.NEGATIVE_INFINITY;
    const input = () => {
      touched = performance.now();
    };
    const onScroll = () => {
      const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < AT_END;
      if (atEnd) pinned.current = true;
      else if (performance.now() - touched < READER_SCROLL_MS) pinned.current = false;
    };
    // A wheel or key upwards lets go at once, before the scroll it causes (a reply growing in the same frame
    // would otherwise pull the reader back down).
    const onWheel = (e: WheelEvent) => {
      input();
      if (e.deltaY < 0) pinned.current = false;
    };
    const onKey = (e: KeyboardEvent) => {
      input();
      if (['ArrowUp', 'PageUp', 'Home'].includes(e.key)) pinned.current = false;
    };
    el.addEventListener('scroll', onScroll, { passive: true });
    el.addEventListener('wheel', onWheel, { passive: true });
    el.addEventListener('keydown', onKey);
    el.addEventListener('touchstart', input, { passive: true });
    el.addEventListener('touchmove', input, { passive: true });
    // On the scroller itself, not a Message in it: its scrollbar.
    const onPointer = (e: PointerEvent) => e.target === el && input();
    el.addEventListener('pointerdown', onPointer);
    toEnd();
    return () => {
      grew.disconnect();
      children.disconnect();
      el.removeEventListener('scroll', onScroll);
      el.removeEventListener('wheel', onWheel);
      el.removeEventListener('keydown', onKey);
      el.removeEventListener('touchstart', input);
      el.removeEventListener('touchmove', input);
      el.removeEventListener('pointerdown', onPointer);
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

/**
 * The heights of the replies streaming in (outside the virtualized rows), by Message id: once a reply is stored
 * it becomes a row, and starting that row at its real height instead of an estimate keeps the transcript from
 * shrinking for a frame (which would pull a reader who scrolled up to somewhere else).
 */
export function useLiveHeights(live: RefObject<HTMLElement | null>) {
  const heights = useRef(new Map<string, number>());
  // Read after layout, as the replies grow (a ResizeObserver): nothing forces a layout while streaming.
  useEffect(() => {
    const el = live.current;
    if (!el) return;
    const grew = new ResizeObserver(() => {
      for (const a of el.querySelectorAll('article[data-message-id]')) {
        const style = getComputedStyle(a);
        heights.current.set(
          a.getAttribute('data-message-id')!,
          a.getBoundingClientRect().height +
            Number.parseFloat(style.marginTop) +
            Number.parseFloat(style.marginBottom),
        );
      }
    });
    grew.observe(el);
    return () => grew.disconnect();
  }, [live]);
  return heights.current;
}
