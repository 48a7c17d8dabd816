export { MARKDOWN_BOUNDS, type MarkdownBounds, readsAsMarkdown } from './bounds.ts';
