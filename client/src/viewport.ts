import { useEffect } from 'react';

/** Below this visible height (a phone with its keyboard open), the chat drops everything but itself. */
const SHORT = 600;

/**
 * Sizes the app to the part of the screen that is visible (VisualViewport): with a phone's keyboard open the
 * layout viewport keeps its height (iOS, and Android unless it resizes content), so a composer at the bottom of
 * `100dvh` would sit behind the keyboard. Sets `--app-height` and `--app-top` on the root, and the class
 * `short-viewport` when little is visible. Pinch-zoom also shrinks the visual viewport: then nothing changes.
 */
export function useVisibleViewport(): void {
  useEffect(() => {
    const vv = window.visualViewport;
    const root = document.documentElement;
    const update = () => {
      const height = vv && Math.abs(vv.scale - 1) < 0.01 ? vv.height : window.innerHeight;
      const top = vv && Math.abs(vv.scale - 1) < 0.01 ? vv.offsetTop : 0;
      root.style.setProperty('--app-height', `${Math.round(height)}px`);
      root.style.setProperty('--app-top', `${Math.round(top)}px`);
      root.classList.toggle('short-viewport', height < SHORT);
    };
    update();
    vv?.addEventListener('resize', update);
    vv?.addEventListener('scroll', update);
    window.addEventListener('resize', update);
    return () => {
      vv?.removeEventListener('resize', update);
      vv?.removeEventListener('scroll', update);
      window.removeEventListener('resize', update);
      root.style.removeProperty('--app-height');
      root.style.removeProperty('--app-top');
      root.classList.remove('short-viewport');
    };
  }, []);
}
