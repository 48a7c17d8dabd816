// cards/: character cards (SillyTavern V1/V2/V3, PNG or JSON) in and out of NPCs.

export { CardError, readCard, toCardV2 } from './card.ts';
export { isPng, pngTextChunks, pngWithText } from './png.ts';
export { cardRoutes } from './routes.ts';
