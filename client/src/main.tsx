// First: it configures zod before any schema is built (see the file).
import './noEval.ts';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { lazy, StrictMode, Suspense } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { App } from './App.tsx';
import { BrowsePage } from './pages/BrowsePage.tsx';
import { ConversationPage } from './pages/ConversationPage.tsx';
import { ConversationsPage } from './pages/ConversationsPage.tsx';
import { NotFoundPage } from './pages/NotFoundPage.tsx';
import { NpcsPage } from './pages/NpcsPage.tsx';
import { PublishPage } from './pages/PublishPage.tsx';
import { ThreadPage } from './pages/ThreadPage.tsx';
import { ToolsPage } from './pages/ToolsPage.tsx';
import { VillagePage } from './pages/VillagePage.tsx';
import './styles.css';
import './forms.css';

// The chart library is large and only the Usage page needs it.
const UsagePage = lazy(() => import('./pages/UsagePage.tsx').then((m) => ({ default: m.UsagePage })));

const queryClient = new QueryClient({
  defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false, staleTime: 5_000 } },
});

const router = createBrowserRouter([
  // Readers need no account.
  { path: '/profile/:actor/thread/:rkey', element: <ThreadPage /> },
  { path: '/profile/:actor', element: <BrowsePage /> },
  { path: '/threads', element: <BrowsePage /> },
  {
    path: '/',
    element: <App />,
    children: [
      { index: true, element: <ConversationsPage /> },
      { path: 'c/:id', element: <ConversationPage /> },
      { path: 'c/:id/publish', element: <PublishPage /> },
      { path: 'npcs', element: <NpcsPage /> },
      { path: 'tools', element: <ToolsPage /> },
      {
        path: 'usage',
        element: (
          <Suspense fallback={<p className="loading">Loading…</p>}>
            <UsagePage />
          </Suspense>
        ),
      },
      { path: 'village', element: <VillagePage /> },
    ],
  },
  { path: '*', element: <NotFoundPage /> },
]);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
