// cards/: character cards (SillyTavern V1/V2/V3, PNG or JSON) in and out of NPCs, and lorebooks (a card's own,
// or World Info files) attached to NPCs and triggered by their keys.
export { CardError, readCard, toCardV2, toCardV3 } from './card.ts';
export { keyProblem, REGEX_LIMITS } from './keys.ts';
export {
  type Lorebook,
  LorebookError,
  type LoreEntry,
  type LoreRole,
  readBook,
  type Triggered,
  triggerEntries,
} from './lorebook.ts';
export { lorebookRoutes } from './lorebookRoutes.ts';
export { isPng, pngTextChunks, pngWithText } from './png.ts';
export { cardRoutes } from './routes.ts';
export { booksOf, embeddedBook, hasBooksColumn, setEmbeddedBook } from './store.ts';
