// appview/: reading published click.aligned.chat.* threads from the network for the reader UI.
export { Network, type NetworkOptions } from './network.ts';
export { readerRoutes } from './routes.ts';
export { readThread, type ThreadView } from './thread.ts';
