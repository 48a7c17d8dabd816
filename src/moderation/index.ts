// moderation/: the operator's moderation: takedowns of threads and authors on this instance (read within
// appview/'s statements through the `takenDown` fragment), blocks of Players from starting turns, readers' reports; the admin
// routes and the public report route. Every action is kept with who, when and why, and can be lifted.

export { moderationRoutes, reportRoutes } from './routes.ts';
export { blockedSql, takenDown } from './store.ts';
