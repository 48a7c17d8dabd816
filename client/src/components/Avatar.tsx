import { createContext, useContext } from 'react';

/** The Conversation's NPCs' pictures, by name (a transcript's Messages name their NPC). */
export const AvatarContext = createContext<ReadonlyMap<string, string>>(new Map());

/** An NPC's picture (from its card), or nothing: the name beside it says who it is. */
export function Avatar({ url, size = 28 }: { url: string | null | undefined; size?: number }) {
  if (!url) return null;
  return <img className="avatar" src={url} alt="" width={size} height={size} loading="lazy" />;
}

/** The picture of the NPC who wrote a Message, when the transcript knows one. */
export function SpeakerAvatar({ name }: { name: string | null }) {
  const urls = useContext(AvatarContext);
  return <Avatar url={name ? urls.get(name) : undefined} />;
}
