// json/: JSON from Players' files, parsed off the event loop's long path and bounded while it is read. Pure.
export {
  BoundedJsonReader,
  checkJsonLimits,
  JsonLimitError,
  type JsonLimits,
  parseBoundedJson,
} from './bounded.ts';
