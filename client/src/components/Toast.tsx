import { useCallback, useEffect, useRef, useState } from 'react';

/**
 * A short "Saved." that stays on screen wherever the page is scrolled, read out by screen readers (role=status:
 * the element is always there, only its words change, so the change is announced). Fades after a few seconds.
 */
export function useToast(ms = 6000) {
  const [text, setText] = useState('');
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const show = useCallback(
    (message: string) => {
      clearTimeout(timer.current);
      setText(message);
      timer.current = setTimeout(() => setText(''), ms);
    },
    [ms],
  );
  const element = (
    <p role="status" className={text ? 'toast shown' : 'toast'}>
      {text}
    </p>
  );
  return [show, element] as const;
}
