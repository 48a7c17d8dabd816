export { MARKDOWN_BOUNDS, type MarkdownBounds, readsAsMarkdown } from './bounds.ts';
export { THREAD_PAGE, type ThreadWindow, threadPages, threadWindow, turnWeight } from './pages.ts';
