export { MARKDOWN_BOUNDS, type MarkdownBounds, readsAsMarkdown } from './bounds.ts';
export { pageOfThread, THREAD_PAGE, type ThreadWindow, threadPages, threadWindow } from './pages.ts';
