/**
 * NATS subject matching for the in-process bus: tokens split on `.`, `*` matches one token,
 * `>` (last token only) matches one or more.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return i === p.length - 1 && s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

const kvKey = /^[-/_=.a-zA-Z0-9]+$/;
const kvBucket = /^[-_a-zA-Z0-9]+$/;

/** Same key rules as NATS KV, so code that works in-process works against NATS. */
export function assertKvKey(key: string): void {
  if (!kvKey.test(key) || key.startsWith(".") || key.endsWith(".")) throw new Error(`invalid kv key: ${key}`);
}

export function assertKvBucket(bucket: string): void {
  if (!kvBucket.test(bucket)) throw new Error(`invalid kv bucket name: ${bucket}`);
}

const noticeChannel = /^[-_a-zA-Z0-9]+$/;

/** A notice channel names a NATS stream and a subject token: the same rules in both adapters. */
export function assertNoticeChannel(channel: string): void {
  if (!noticeChannel.test(channel)) throw new Error(`invalid notice channel name: ${channel}`);
}
