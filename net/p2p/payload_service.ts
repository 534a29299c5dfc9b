/**
 * Payload transfers between participants over the `/psyche/payload/1` stream protocol.
 *
 * A node `provide`s bytes (a DisTrO result, a model tensor, a config) and gets back their sha256
 * hash, which it announces over gossip. Others `fetch(hash, { providers })`: the request goes to
 * one provider at a time, best first by what this node measured of each (`provider_scores.ts`:
 * failures, direct before relayed, expected transfer time), with a stall timeout, retries and
 * back-off (`fallback.ts`); the response's declared length is checked against the caller's
 * limit before a byte of content is accepted, and the bytes are hashed on arrival: a provider
 * whose bytes do not match is marked bad and not asked again. A provider that stalls half-way
 * leaves its bytes behind (`partial_content.ts`): the next attempt asks the next provider for the
 * rest only, from that offset, over either path: a prefix that came in-band can be finished over
 * bulk and the other way round. Content assembled from several sources (providers, and bulk
 * connections, which count apart from their provider) that fails its hash blames nobody: it is
 * discarded and fetched whole, without resuming, from the provider that completed it. A provider
 * that predates offsets refuses a request for a rest, and is asked for the whole content. At most
 * `maxConcurrentDownloads` transfers run at once, and at most `maxDownloadsPerPeer` from one
 * provider. A fetch with a `budget` charges each attempt the bytes it asks its provider for in the
 * round (`byte_budget.ts`), so no peer can make this node download more than the caller allows
 * per round.
 *
 * Content can also be provided under a name (P2P model sharing asks for "config" and then for
 * each tensor by name); `fetchNamed` returns the bytes with the hash the provider declared,
 * checked against the bytes.
 *
 * Large content can skip the encryption: unless `bulk: false`, the service runs a plain-TCP bulk
 * listener (`bulk_listener.ts`) and a request may accept a `BulkOffer` (a single-use ticket and
 * the listener's port, sent over the noise-authenticated stream) instead of the bytes. The
 * fetcher then reads the bytes over plain TCP from the address it reached the provider at,
 * checked against the offered length and hash, and if anything about the bulk connection fails,
 * asks the provider in-band for what it did not deliver. docs/p2p.md explains why this is safe.
 *
 * @module
 */
import type { Connection, PeerId, Stream } from "@libp2p/interface";
import type { Multiaddr } from "@multiformats/multiaddr";
import { peerIdFromString } from "@libp2p/peer-id";
import {
  type ContentHash,
  ContentStore,
  hashFromBytes,
  hashToBytes,
  type ProvideOptions,
} from "./content_store.ts";
import {
  DEFAULT_RETRY_POLICY,
  PayloadAttemptError,
  type RetryPolicy,
  withFallback,
} from "./fallback.ts";
import { peerIdOf } from "./identity.ts";
import { type ProviderFigures, ProviderScores } from "./provider_scores.ts";
import { isRelayed } from "./reachability.ts";
import {
  type BulkFailureCode,
  bulkFetch,
  BulkFetchError,
  bulkWorthwhile,
  DEFAULT_BULK_BYTES_PER_RTT_MS,
} from "./bulk_fetch.ts";
import { BulkListener, type BulkListenerStats } from "./bulk_listener.ts";
import { RoundByteBudget } from "./byte_budget.ts";
import { TicketBook } from "./bulk_tickets.ts";
import { Limiter } from "./limiter.ts";
import type { P2PNode } from "./node.ts";
import {
  encodeRequest,
  encodeResponseHeader,
  PAYLOAD_PROTOCOL,
  type PayloadRequest,
  PayloadWireError,
  type ResponseHeader,
  TICKET_BYTES,
} from "./payload_wire.ts";
import { StreamReader } from "./stream_reader.ts";
import { readBody, readHeader, readRequest, sendChunked } from "./payload_stream.ts";
import { PartialContent, PrefixConflict } from "./partial_content.ts";
import { equalBytes, type PublicKeyBytes } from "../../common/mod.ts";

/** Largest payload accepted by default: 512 MiB (a 1.2B model's largest tensor is ~130 MB). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 512 * 1024 * 1024;
/** Transfers at once, by default (Psyche's `--max-concurrent-parameter-requests`). */
export const DEFAULT_MAX_CONCURRENT_DOWNLOADS = 8;
/**
 * Transfers at once from one provider, by default: half the total, so a model download always
 * draws on at least two uplinks when two providers have it.
 */
export const DEFAULT_MAX_DOWNLOADS_PER_PEER = 4;
/** Bytes per `stream.send` when serving: large enough to amortise per-frame costs. */
export const DEFAULT_CHUNK_BYTES = 1024 * 1024;
/** How long a provider waits for a complete request, by default. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/**
 * Smallest content offered over the bulk path, by default: below it the extra connection costs
 * more than the encryption it saves (a DisTrO result of the 20M model is 58.5 KB).
 */
export const DEFAULT_BULK_MIN_BYTES = 1024 * 1024;

/**
 * Settings of the plain-TCP bulk path. Both roles follow them: a provider with bulk on runs the
 * listener and may answer with offers; a fetcher with bulk on accepts offers.
 */
export interface BulkOptions {
  /** Interface the bulk listener binds to. Default: the node's listen host. */
  host?: string;
  /** Port of the bulk listener; 0 (the default) picks a free one. */
  port?: number;
  /** Port named in offers when it differs from the bound one (port forwarding behind NAT). */
  advertisePort?: number;
  /** Provider: smallest content offered over bulk; smaller content is sent in-band. */
  minBytes?: number;
  /**
   * Fetcher: accept an offer only for payloads of at least this many bytes per millisecond of
   * round trip to the provider (see `bulkWorthwhile`). Default 1 MiB; 0 accepts every offer.
   */
  bytesPerRttMs?: number;
  /** How long a ticket stays valid. Default 10 s. */
  ticketLifetimeMs?: number;
  /** Unspent tickets one peer may hold (beyond it, that peer is served in-band). Default 64. */
  maxTicketsPerPeer?: number;
  /** Bulk connections served at once. Default 32. */
  maxConnections?: number;
  /** Bulk connections served at once to one IP address. Default 16. */
  maxConnectionsPerAddress?: number;
  /** How long the listener waits for a complete bulk request. Default 5 s. */
  requestTimeoutMs?: number;
  /** How long one write may make no progress before the listener hangs up. Default 30 s. */
  idleTimeoutMs?: number;
  /** Random bytes for tickets. Default `crypto.getRandomValues`. */
  randomBytes?: (length: number) => Uint8Array;
  /** Milliseconds now, for ticket expiry. Default `Date.now`. */
  now?: () => number;
}

/** Options for `PayloadService.start`. */
export interface PayloadServiceOptions {
  /** Transfers (attempts) that may run at once across all fetches. */
  maxConcurrentDownloads?: number;
  /** Transfers (attempts) that may run at once from one provider. */
  maxDownloadsPerPeer?: number;
  /** Hard cap on any response's declared length; larger ones are refused before reading. */
  maxPayloadBytes?: number;
  /** Retry, timeout and back-off settings for fetches (merged over `DEFAULT_RETRY_POLICY`). */
  retry?: Partial<RetryPolicy>;
  /** Bytes per send when serving. */
  chunkBytes?: number;
  /** Inbound payload streams a provider serves at once. Default 64. */
  maxInboundStreams?: number;
  /** How long a provider waits for a complete request before resetting the stream. */
  requestTimeoutMs?: number;
  /**
   * The plain-TCP bulk path for large content (on by default); `false` keeps every byte on the
   * encrypted stream, for deployments that want that.
   */
  bulk?: BulkOptions | false;
}

/** Options for `fetch` and `fetchNamed`. */
export interface FetchOptions {
  /**
   * Who may have the content, by public key. The service asks them best first by its own
   * measurements (`provider_scores.ts`), after the first `pinned`. Our own key is skipped.
   */
  providers: readonly PublicKeyBytes[];
  /**
   * How many of `providers`, from the front, are asked first and in the given order (e.g. the
   * trainer that announced a result, the only peer sure to have it). Default 0.
   */
  pinned?: number;
  /** Aborts the fetch (all attempts and waits). */
  signal?: AbortSignal;
  /** Refuse responses longer than this (and the service's `maxPayloadBytes`). */
  maxBytes?: number;
  /** The exact length announced (e.g. `TrainingResult.payloadSize`); anything else is refused. */
  expectedSize?: number;
  /**
   * Charge every attempt to its provider's byte budget for `round`: each attempt charges the
   * bytes it asks the provider for (the declared length, less the offset of a resumed attempt),
   * before a content byte is read, and a provider whose budget cannot cover them fails the
   * attempt as `over-budget` (see `byte_budget.ts`).
   */
  budget?: { round: number; bytesPerPeer: number };
  /** Also provide the fetched bytes from now on, with these options. */
  provideAs?: ProvideOptions;
  /**
   * This fetch's retry settings, over the service's: content needed within seconds (a round's
   * result) cannot spend them on the default back-off.
   */
  retry?: Partial<RetryPolicy>;
}

/** Counters of this node's transfers. */
export interface PayloadStats {
  served: number;
  servedBytes: number;
  fetched: number;
  fetchedBytes: number;
  /** Content bytes read off streams and bulk connections, failed attempts included. */
  receivedBytes: number;
  failedAttempts: number;
  /** Requests this provider refused as malformed. */
  badRequests: number;
  peakConcurrentDownloads: number;
  /** Bulk offers made (tickets issued). */
  bulkOffered: number;
  /** Of `served`, transfers completed by the bulk listener. */
  bulkServed: number;
  /** Of `fetched`, fetches completed over the bulk path. */
  bulkFetched: number;
  /**
   * Of `served`, requests for the rest of content from an offset, in-band or over the bulk
   * listener (`servedBytes` counts the rest).
   */
  resumedServed: number;
  /**
   * Of `fetched`, fetches completed from an offset, on bytes an earlier attempt (or the same
   * attempt's failed bulk connection) left.
   */
  resumedFetches: number;
  /** Contents assembled from several providers that failed their hash, fetched whole again. */
  resumeDiscards: number;
  /** Offers whose bulk fetch failed and fell back to the in-band stream, by reason. */
  bulkFallbacks: Partial<Record<BulkFailureCode, number>>;
  /** The bulk listener's refusals (see `BulkListenerStats.refused`). */
  bulkRefused: BulkListenerStats["refused"];
}

interface BulkRuntime {
  listener: BulkListener;
  tickets: TicketBook;
  advertisePort: number;
  minBytes: number;
  randomBytes: (length: number) => Uint8Array;
  now: () => number;
}

type BulkOffer = Extract<ResponseHeader, { status: "BulkOffer" }>;

/** Verified content, and whether it went on from bytes an earlier attempt left. */
interface Fetched {
  hash: ContentHash;
  bytes: Uint8Array;
  resumed: boolean;
}

/**
 * What one request came to: verified content, a bulk offer, or a `restart`: the bytes held did
 * not belong with this provider's, or mixed content failed its hash, or the provider does not
 * serve from an offset (it predates them); the bytes were discarded, and the provider is to be
 * asked for the whole content. The reason is for messages.
 */
type RequestOutcome = Fetched | { offer: BulkOffer } | { restart: string };

/** What a response must satisfy before its content is read. */
interface Checks {
  /** Largest length accepted. */
  limit: number;
  /** The exact length required, when known. */
  expectedSize?: number;
  /** The provider's byte budget to charge the length to. */
  budget?: FetchOptions["budget"];
  /** Told whenever bytes arrive (re-arms the attempt's stall timeout). */
  progress?: () => void;
}

/** Serves this node's content and fetches others'. Start with `PayloadService.start(node)`. */
export class PayloadService {
  /** What this node serves. */
  readonly store = new ContentStore();
  readonly #node: P2PNode;
  readonly #limiter: Limiter;
  readonly #maxPerPeer: number;
  /** Transfers in flight per provider (entries go when a provider has none running or waiting). */
  readonly #perPeer = new Map<string, Limiter>();
  readonly #maxPayloadBytes: number;
  readonly #policy: RetryPolicy;
  readonly #chunkBytes: number;
  readonly #requestTimeoutMs: number;
  readonly #bad = new Set<string>();
  /** Providers whose bulk listener we could not reach: asked in-band only, until cleared. */
  readonly #bulkUnreachable = new Set<string>();
  readonly #stats = {
    served: 0,
    servedBytes: 0,
    fetched: 0,
    fetchedBytes: 0,
    receivedBytes: 0,
    failedAttempts: 0,
    badRequests: 0,
    bulkOffered: 0,
    bulkFetched: 0,
    resumedServed: 0,
    resumedFetches: 0,
    resumeDiscards: 0,
  };
  readonly #bulkFallbacks: Partial<Record<BulkFailureCode, number>> = {};
  readonly #acceptBulk: boolean;
  readonly #bytesPerRttMs: number;
  /** Round trips, throughput, route and failures of every provider asked. */
  readonly #scores = new ProviderScores();
  /** Bytes each provider made us download per round (fetches with a `budget`). */
  readonly #budget = new RoundByteBudget();
  #bulk: BulkRuntime | undefined;

  private constructor(node: P2PNode, options: PayloadServiceOptions) {
    this.#node = node;
    this.#limiter = new Limiter(options.maxConcurrentDownloads ?? DEFAULT_MAX_CONCURRENT_DOWNLOADS);
    this.#maxPerPeer = options.maxDownloadsPerPeer ?? DEFAULT_MAX_DOWNLOADS_PER_PEER;
    checkPositive("maxDownloadsPerPeer", this.#maxPerPeer);
    this.#maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.#policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.#chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    checkPositive("requestTimeoutMs", this.#requestTimeoutMs);
    checkPositive("maxPayloadBytes", this.#maxPayloadBytes);
    checkPositive("chunkBytes", this.#chunkBytes);
    this.#acceptBulk = options.bulk !== false;
    const bulk = options.bulk === false ? {} : options.bulk ?? {};
    this.#bytesPerRttMs = bulk.bytesPerRttMs ?? DEFAULT_BULK_BYTES_PER_RTT_MS;
    if (!(this.#bytesPerRttMs >= 0)) {
      throw new RangeError(
        `bulk.bytesPerRttMs must be a non-negative number, found ${this.#bytesPerRttMs}`,
      );
    }
  }

  /**
   * Registers the payload protocol on `node`, starts the bulk listener unless `bulk: false`
   * (it closes when the node stops, or with `close()`), and returns the service.
   */
  static async start(node: P2PNode, options: PayloadServiceOptions = {}): Promise<PayloadService> {
    const service = new PayloadService(node, options);
    if (options.bulk !== false) {
      const bulk = await startBulk(
        options.bulk ?? {},
        node.host,
        (hash) => service.store.get(hash),
      );
      service.#bulk = bulk;
      node.onStop(() => bulk.listener.close());
    }
    await node.libp2p.handle(
      PAYLOAD_PROTOCOL,
      (stream: Stream, connection: Connection) => service.#serve(stream, connection),
      {
        maxInboundStreams: options.maxInboundStreams ?? 64,
        maxOutboundStreams: Math.max(64, options.maxConcurrentDownloads ?? 0),
      },
    );
    return service;
  }

  /** A snapshot of the counters. */
  get stats(): PayloadStats {
    const listener = this.#bulk?.listener.stats;
    return {
      ...this.#stats,
      served: this.#stats.served + (listener?.served ?? 0),
      servedBytes: this.#stats.servedBytes + (listener?.servedBytes ?? 0),
      resumedServed: this.#stats.resumedServed + (listener?.resumed ?? 0),
      bulkServed: listener?.served ?? 0,
      bulkFallbacks: { ...this.#bulkFallbacks },
      bulkRefused: listener?.refused ?? {},
      peakConcurrentDownloads: this.#limiter.peak,
    };
  }

  /** Where the bulk listener listens, or `undefined` when the bulk path is off. */
  get bulkAddress(): { host: string; port: number } | undefined {
    const listener = this.#bulk?.listener;
    return listener === undefined ? undefined : { host: listener.host, port: listener.port };
  }

  /**
   * Serves `bytes` from now on (they are not copied: do not change them) and returns their hash.
   * With `name`, also serves them under that name; with `step`, `forgetBefore` can drop them.
   */
  provide(bytes: Uint8Array, options: ProvideOptions = {}): ContentHash {
    return this.store.put(bytes, options);
  }

  /**
   * {@link PayloadService.provide} as steps: the bytes are hashed a chunk at a time, pausing
   * between chunks (ContentStore.putSteps), and served from the last step on.
   */
  provideSteps(
    bytes: Uint8Array,
    options: Parameters<ContentStore["putSteps"]>[1] = {},
  ): Generator<void, ContentHash> {
    return this.store.putSteps(bytes, options);
  }

  /** Stops serving the given hashes. Returns how many were served. */
  forget(hashes: Iterable<ContentHash>): number {
    return this.store.forget(hashes);
  }

  /**
   * Stops serving content stored for steps below `step` (Psyche keeps the last two), and
   * forgets the byte budgets of those rounds.
   */
  forgetBefore(step: number): number {
    this.#budget.forgetBefore(step);
    return this.store.forgetBefore(step);
  }

  /** Bytes `provider` (a public key) made us download in `round`, per the fetches' budgets. */
  budgetSpent(provider: PublicKeyBytes, round: number): number {
    return this.#budget.spent(peerIdOf(provider).toString(), round);
  }

  /** What this node measured of each provider it asked, by peer id. */
  providerFigures(): Map<string, ProviderFigures> {
    return this.#scores.snapshot();
  }

  /**
   * `providers` (public keys) best first for fetching `bytes`, by this node's measurements, and
   * each one's relative upload speed (for sharing a large download out). Our own key is left
   * out.
   */
  rankProviders(
    providers: readonly PublicKeyBytes[],
    bytes: number,
  ): { providers: PublicKeyBytes[]; weights: number[] } {
    const self = this.#node.peerId.toString();
    const byId = new Map(providers.map((key) => [peerIdOf(key).toString(), key]));
    byId.delete(self);
    const ranked = this.#scores.rank([...byId.keys()], bytes);
    return {
      providers: ranked.map((id) => byId.get(id)!),
      weights: this.#scores.weights(ranked),
    };
  }

  /** Peer ids of providers marked bad (they served bytes that did not match their hash). */
  badProviders(): string[] {
    return [...this.#bad];
  }

  /**
   * Gives every provider marked bad another chance (e.g. at a new epoch), and the bulk path
   * another try with providers whose bulk listener was unreachable.
   */
  clearBadProviders(): void {
    this.#bad.clear();
    this.#bulkUnreachable.clear();
  }

  /**
   * Fetches the content with sha256 `hash` from one of `providers`, verified. Throws
   * `PayloadFetchError` listing each failed attempt when no provider delivered.
   */
  async fetch(hash: ContentHash, options: FetchOptions): Promise<Uint8Array> {
    const expected = hashToBytes(hash);
    const local = this.store.get(hash);
    if (local !== undefined) return local;
    const { bytes } = await this.#fetch(
      { kind: "ByHash", hash: expected },
      `payload ${hash}`,
      options,
    );
    return bytes;
  }

  /**
   * Fetches the content a provider serves under `name`, with the hash it declared (checked
   * against the bytes). Different providers may serve different content under a name: compare
   * the hash with what you expect when you know it.
   */
  fetchNamed(
    name: string,
    options: FetchOptions,
  ): Promise<{ hash: ContentHash; bytes: Uint8Array }> {
    return this.#fetch({ kind: "ByName", name }, `blob "${name}"`, options);
  }

  /** Stops serving the payload protocol and closes the bulk listener. The node keeps running. */
  async close(): Promise<void> {
    if (this.#node.libp2p.status === "started") await this.#node.libp2p.unhandle(PAYLOAD_PROTOCOL);
    await this.#bulk?.listener.close();
  }

  async #fetch(
    request: PayloadRequest,
    what: string,
    options: FetchOptions,
  ): Promise<{ hash: ContentHash; bytes: Uint8Array }> {
    const limit = Math.min(options.maxBytes ?? Infinity, this.#maxPayloadBytes);
    if (options.expectedSize !== undefined && options.expectedSize > limit) {
      throw new RangeError(
        `${what}: expected size ${options.expectedSize} exceeds the limit ${limit}`,
      );
    }
    const self = this.#node.peerId.toString();
    const ids = options.providers.map((key) => peerIdOf(key).toString());
    const pinned = ids.slice(0, options.pinned ?? 0);
    const rest = this.#scores.rank(ids.slice(pinned.length), options.expectedSize ?? 0);
    const providers = [...new Set([...pinned, ...rest])].filter((id) => id !== self);
    // Bytes received survive a failed attempt: the next one asks for the rest.
    const partial = new PartialContent();
    const result = await withFallback(
      providers,
      (provider, signal, progress) =>
        this.#attempt(
          peerIdFromString(provider),
          request,
          partial,
          { limit, expectedSize: options.expectedSize, budget: options.budget, progress },
          signal,
        )
          .catch((error) => {
            this.#stats.failedAttempts++;
            throw error;
          }),
      {
        what,
        policy: options.retry === undefined ? this.#policy : { ...this.#policy, ...options.retry },
        signal: options.signal,
        gate: (provider, task, signal) =>
          this.#perPeerLimiter(provider).run(() => this.#limiter.run(task, signal), signal)
            .finally(() => this.#prunePerPeer(provider)),
        isBad: (p) => this.#bad.has(p),
        markBad: (p) => this.#bad.add(p),
        heldBytes: () => partial.offset,
        onFailure: (p, code) => {
          // What says something about the provider; "not found" or a budget says nothing.
          if (code === "timeout" || code === "unreachable" || code === "protocol") {
            this.#scores.noteFailure(p);
          }
        },
      },
    );
    this.#stats.fetched++;
    this.#stats.fetchedBytes += result.bytes.length;
    if (result.resumed) this.#stats.resumedFetches++;
    if (options.provideAs !== undefined) this.store.put(result.bytes, options.provideAs);
    return { hash: result.hash, bytes: result.bytes };
  }

  /**
   * One attempt at one provider: the request over the payload stream (for the rest only, when
   * `partial` holds bytes of an earlier attempt) and, when the provider answers with a bulk
   * offer, the bulk fetch (of that rest). If the bulk fetch fails for any reason, the provider is
   * asked in-band, refusing offers, for what the bulk connection left: the rest from the bytes
   * now held. A bulk failure never marks the provider bad: anyone on the path could have
   * tampered with the plain connection; only bytes that came over the authenticated stream (a
   * hash mismatch there) can. When the bytes held do not go with the provider's, or it does not
   * serve from an offset (see `RequestOutcome`), the provider is asked again for the whole
   * content.
   */
  async #attempt(
    peer: PeerId,
    request: PayloadRequest,
    partial: PartialContent,
    checks: Checks,
    signal: AbortSignal,
  ): Promise<Fetched> {
    const key = peer.toString();
    const { budget, expectedSize } = checks;
    const offset = partial.offset;
    // What this attempt asks the provider for: the rest, when bytes are held.
    const wanted = expectedSize === undefined ? undefined : expectedSize - offset;
    if (budget !== undefined && wanted !== undefined) {
      // Known over budget: not even dialled.
      this.#checkBudget(key, wanted, budget, false);
    }
    const connection = await this.#node.libp2p.dial(peer, { signal });
    this.#scores.noteRoute(key, isRelayed(connection.remoteAddr.toString()));
    const worthwhile = bulkWorthwhile(wanted, this.#scores.roundTripMs(key), this.#bytesPerRttMs);
    const hostname = this.#acceptBulk && worthwhile && !this.#bulkUnreachable.has(key)
      ? ipOf(connection.remoteAddr)
      : undefined;
    const acceptBulk = hostname !== undefined;
    let outcome = await this.#request(
      connection,
      { ...request, acceptBulk, offset },
      partial,
      checks,
      signal,
    );
    if ("offer" in outcome) {
      const { offer } = outcome;
      const fetched = await this.#bulkFetch(key, hostname!, offer, partial, checks, signal);
      if (fetched !== undefined) return fetched;
      // In-band from where the bulk connection left off: those bytes are charged to the budget
      // already. Unless a failed hash dropped the bytes held: all of it is new bytes then.
      const from = partial.offset;
      const inBand = from < offset
        ? checks
        : { limit: checks.limit, expectedSize: offer.length, progress: checks.progress };
      const again = await this.#node.libp2p.dial(peer, { signal });
      const rest = { ...request, acceptBulk: false, offset: from };
      outcome = await this.#request(again, rest, partial, inBand, signal);
    }
    if ("restart" in outcome) {
      // The whole content, charged to the budget again: those are new bytes.
      const again = await this.#node.libp2p.dial(peer, { signal });
      const whole = { ...request, acceptBulk: false, offset: 0 };
      outcome = await this.#request(again, whole, partial, checks, signal);
      if ("restart" in outcome) {
        // Unreachable from offset 0 (one source, nothing held before): a bug if it happens.
        throw new Error(`restart from offset 0: ${outcome.restart}`);
      }
    }
    if ("offer" in outcome) {
      throw new PayloadAttemptError(
        "protocol",
        "provider made a bulk offer to a request refusing one",
      );
    }
    return outcome;
  }

  /**
   * Fetches an offer's content (the rest, after the bytes `partial` holds) over the provider's
   * bulk listener into `partial`: the verified content, or `undefined` after a bulk failure
   * (counted), for the caller to go on in-band. The bytes are recorded under a source of their
   * own, not the provider's: a mismatch of content they are part of blames nobody.
   */
  async #bulkFetch(
    key: string,
    hostname: string,
    offer: BulkOffer,
    partial: PartialContent,
    checks: Checks,
    signal: AbortSignal,
  ): Promise<Fetched | undefined> {
    const from = partial.offset;
    try {
      const started = performance.now();
      const bytes = await bulkFetch({
        hostname,
        port: offer.port,
        ticket: offer.ticket,
        hash: offer.hash,
        length: offer.length,
        into: partial,
        source: `${key}/bulk`,
        signal,
        received: (n) => {
          this.#stats.receivedBytes += n;
          checks.progress?.();
        },
      });
      this.#scores.noteTransfer(key, bytes.length - from, performance.now() - started);
      this.#stats.bulkFetched++;
      return { hash: hashFromBytes(offer.hash), bytes, resumed: partial.resumes > 0 };
    } catch (error) {
      if (!(error instanceof BulkFetchError)) throw error;
      this.#bulkFallbacks[error.code] = (this.#bulkFallbacks[error.code] ?? 0) + 1;
      if (error.mixed) this.#stats.resumeDiscards++;
      // A listener we cannot reach (firewall, NAT without the port) stays so: skip the detour.
      if (error.code === "unreachable") this.#bulkUnreachable.add(key);
      return undefined;
    }
  }

  /**
   * Sends `request` on a new payload stream of `connection` and reads the answer into
   * `partial`: the verified content, a bulk offer whose hash and length passed the same checks,
   * or a restart (see `RequestOutcome`). The answer must fit the question: `OkFrom` from the
   * requested offset to a request with one, `Ok` to one without, `BulkOffer` (for the rest,
   * which must go with the bytes held) only to one that welcomed it.
   */
  async #request(
    connection: Connection,
    request: PayloadRequest,
    partial: PartialContent,
    checks: Checks,
    signal: AbortSignal,
  ): Promise<RequestOutcome> {
    // The protocol name travels with the request instead of a round trip ahead of it: a small
    // fetch (a DisTrO result) is latency-bound, and this takes ~20% off its time on loopback.
    const stream = await connection.newStream(PAYLOAD_PROTOCOL, { signal, negotiateFully: false });
    const reader = new StreamReader(stream);
    const onAbort = () => stream.abort(new Error(`payload request aborted: ${signal.reason}`));
    signal.addEventListener("abort", onAbort, { once: true });
    const offset = request.offset ?? 0;
    try {
      const sent = performance.now();
      stream.send(encodeRequest(request));
      await stream.close({ signal });
      const { header, rest } = await readHeader(reader);
      const answered = performance.now();
      const peer = connection.remotePeer.toString();
      this.#scores.noteRoundTrip(peer, answered - sent);
      checks.progress?.();
      if (offset > 0 && (header.status === "BadOffset" || header.status === "BadRequest")) {
        // BadOffset: its content is shorter than the bytes held, not the content they belong
        // to. BadRequest: a provider from before offsets (or bulk offers for a rest) refuses the
        // request; it still serves the whole content.
        partial.discard({ resume: true });
        return {
          restart: header.status === "BadOffset"
            ? `provider has no byte ${offset}`
            : `provider refuses a request from byte ${offset}`,
        };
      }
      if (header.status !== "Ok" && header.status !== "BulkOffer" && header.status !== "OkFrom") {
        throw header.status === "NotFound"
          ? new PayloadAttemptError("not-found", "provider does not have it")
          : new PayloadAttemptError(
            "protocol",
            `provider answered ${header.status} to a request from byte ${offset}`,
          );
      }
      // Ok answers a whole request, OkFrom one from an offset; a BulkOffer either, asked.
      if (header.status === "OkFrom" ? offset === 0 : header.status === "Ok" && offset > 0) {
        throw new PayloadAttemptError(
          "protocol",
          `provider answered ${header.status} to a request from byte ${offset}`,
        );
      }
      if (request.kind === "ByHash" && !equalBytes(header.hash, request.hash)) {
        throw new PayloadAttemptError(
          "protocol",
          `provider answered with hash ${hashFromBytes(header.hash)}`,
        );
      }
      if (header.length > checks.limit) {
        throw new PayloadAttemptError(
          "too-large",
          `response declares ${header.length} bytes, the limit is ${checks.limit}`,
        );
      }
      if (checks.expectedSize !== undefined && header.length !== checks.expectedSize) {
        throw new PayloadAttemptError(
          header.length > checks.expectedSize ? "too-large" : "protocol",
          `response declares ${header.length} bytes, ${checks.expectedSize} were announced`,
        );
      }
      // Where the bytes it sends (in-band, or over bulk for an offer) start.
      const from = header.status === "OkFrom"
        ? header.offset
        : header.status === "BulkOffer"
        ? offset
        : 0;
      if (checks.budget !== undefined) {
        this.#checkBudget(peer, header.length - from, checks.budget, true);
      }
      if (header.status === "BulkOffer") {
        if (request.acceptBulk !== true) {
          throw new PayloadAttemptError("protocol", "provider made a bulk offer unasked");
        }
        if (rest.length > 0 || (await reader.next()) !== undefined) {
          throw new PayloadAttemptError("protocol", "provider sent bytes after its bulk offer");
        }
      }
      const declared = { hash: header.hash, length: header.length, offset: from };
      try {
        // An offer's rest must go with the prefix before a connection is opened for it.
        if (header.status === "BulkOffer") partial.check(peer, declared);
        else partial.begin(peer, declared);
      } catch (error) {
        if (!(error instanceof PrefixConflict)) throw error;
        partial.discard({ resume: true });
        stream.abort(error); // Its rest is of no use: stop it coming.
        return { restart: error.message };
      }
      if (header.status === "BulkOffer") return { offer: header };
      await readBody(reader, {
        into: partial,
        provider: peer,
        first: rest,
        received: (n) => {
          this.#stats.receivedBytes += n;
          checks.progress?.();
        },
      });
      const verified = partial.verify();
      if (!verified.ok) {
        // Mixed content cannot tell who lied: nobody is blamed, and it is fetched whole.
        if (verified.sources >= 2) {
          this.#stats.resumeDiscards++;
          return { restart: `content from ${verified.sources} sources hashes to ${verified.hash}` };
        }
        throw new PayloadAttemptError(
          "hash-mismatch",
          `received bytes hash to ${verified.hash}, expected ${verified.declared}`,
        );
      }
      this.#scores.noteTransfer(peer, header.length - from, performance.now() - answered);
      return { hash: verified.hash, bytes: verified.bytes, resumed: partial.resumes > 0 };
    } catch (error) {
      stream.abort(error instanceof Error ? error : new Error(String(error)));
      throw error;
    } finally {
      signal.removeEventListener("abort", onAbort);
      reader.release();
    }
  }

  /**
   * Throws `over-budget` unless `provider` can still make us download `bytes` in the budget's
   * round; with `charge`, also charges them.
   */
  #checkBudget(
    provider: string,
    bytes: number,
    budget: NonNullable<Checks["budget"]>,
    charge: boolean,
  ): void {
    const { round, bytesPerPeer: limit } = budget;
    const spent = this.#budget.spent(provider, round);
    const fits = charge
      ? this.#budget.charge(provider, { round, bytes, limit })
      : spent + bytes <= limit;
    if (!fits) {
      throw new PayloadAttemptError(
        "over-budget",
        `provider already made us download ${spent} bytes in round ${round}: ${bytes} more ` +
          `would pass its ${limit}-byte budget`,
      );
    }
  }

  #perPeerLimiter(provider: string): Limiter {
    let limiter = this.#perPeer.get(provider);
    if (limiter === undefined) {
      limiter = new Limiter(this.#maxPerPeer);
      this.#perPeer.set(provider, limiter);
    }
    return limiter;
  }

  #prunePerPeer(provider: string): void {
    const limiter = this.#perPeer.get(provider);
    if (limiter !== undefined && limiter.active === 0 && limiter.waiting === 0) {
      this.#perPeer.delete(provider);
    }
  }

  /**
   * Sends a bulk offer for `bytes` from `offset` (a ticket for that rest) if the bulk path is on,
   * the bytes to send are enough and the peer is under its ticket cap. Returns whether it did
   * (else the caller serves in-band).
   */
  #offerBulk(
    stream: Stream,
    connection: Connection,
    content: { hash: ContentHash; bytes: Uint8Array; offset: number },
  ): boolean {
    const { hash, bytes, offset } = content;
    const bulk = this.#bulk;
    if (bulk === undefined || bytes.length - offset < bulk.minBytes) return false;
    const ticket = bulk.randomBytes(TICKET_BYTES);
    const peer = connection.remotePeer.toString();
    if (!bulk.tickets.issue({ ticket, peer, hash, offset, now: bulk.now() })) return false;
    stream.send(encodeResponseHeader({
      status: "BulkOffer",
      hash: hashToBytes(hash),
      length: bytes.length,
      ticket,
      port: bulk.advertisePort,
    }));
    this.#stats.bulkOffered++;
    return true;
  }

  async #serve(stream: Stream, connection: Connection): Promise<void> {
    const reader = new StreamReader(stream);
    const timer = setTimeout(
      () => stream.abort(new Error(`no complete request within ${this.#requestTimeoutMs} ms`)),
      this.#requestTimeoutMs,
    );
    try {
      let request: PayloadRequest;
      try {
        request = await readRequest(reader);
      } catch (error) {
        if (!(error instanceof PayloadWireError)) throw error;
        this.#stats.badRequests++;
        stream.send(encodeResponseHeader({ status: "BadRequest" }));
        await stream.close();
        return;
      } finally {
        clearTimeout(timer);
      }
      const hash = request.kind === "ByHash"
        ? hashFromBytes(request.hash)
        : this.store.hashOfName(request.name);
      const bytes = hash === undefined ? undefined : this.store.get(hash);
      if (hash === undefined || bytes === undefined) {
        stream.send(encodeResponseHeader({ status: "NotFound" }));
        await stream.close();
        return;
      }
      const offset = request.offset ?? 0;
      if (offset > 0 && offset >= bytes.length) {
        stream.send(encodeResponseHeader({ status: "BadOffset" }));
        await stream.close();
        return;
      }
      if (
        request.acceptBulk === true &&
        this.#offerBulk(stream, connection, { hash, bytes, offset })
      ) {
        await stream.close();
        return;
      }
      const header = encodeResponseHeader(
        offset === 0
          ? { status: "Ok", hash: hashToBytes(hash), length: bytes.length }
          : { status: "OkFrom", hash: hashToBytes(hash), length: bytes.length, offset },
      );
      await sendChunked(stream, [header, bytes.subarray(offset)], this.#chunkBytes);
      await stream.close();
      this.#stats.served++;
      this.#stats.servedBytes += bytes.length - offset;
      if (offset > 0) this.#stats.resumedServed++;
    } catch (error) {
      // The stream failed (reset, timeout, peer gone): nothing to answer, just release it.
      stream.abort(error instanceof Error ? error : new Error(String(error)));
    } finally {
      reader.release();
    }
  }
}

/** Starts the bulk listener and its ticket book per `options` (defaults filled in). */
async function startBulk(
  options: BulkOptions,
  nodeHost: string,
  content: (hash: ContentHash) => Uint8Array | undefined,
): Promise<BulkRuntime> {
  const minBytes = options.minBytes ?? DEFAULT_BULK_MIN_BYTES;
  if (!Number.isSafeInteger(minBytes) || minBytes < 0) {
    throw new RangeError(`bulk.minBytes must be a non-negative integer, found ${minBytes}`);
  }
  const now = options.now ?? Date.now;
  const tickets = new TicketBook({
    lifetimeMs: options.ticketLifetimeMs,
    maxPerPeer: options.maxTicketsPerPeer,
  });
  const listener = BulkListener.start({
    host: options.host ?? nodeHost,
    port: options.port,
    tickets,
    content,
    now,
    // Unset limits take the listener's own defaults.
    maxConnections: options.maxConnections,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress,
    requestTimeoutMs: options.requestTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs,
  });
  const advertisePort = options.advertisePort ?? listener.port;
  if (!Number.isInteger(advertisePort) || advertisePort < 1 || advertisePort > 65_535) {
    await listener.close();
    throw new RangeError(
      `bulk.advertisePort must be an integer in 1..65535, found ${advertisePort}`,
    );
  }
  return {
    listener,
    tickets,
    advertisePort,
    minBytes,
    randomBytes: options.randomBytes ??
      ((length) => crypto.getRandomValues(new Uint8Array(length))),
    now,
  };
}

/** The IP address in a connection's remote multiaddr, or undefined (DNS, relay, unknown). */
/**
 * The IP a bulk connection to this peer would dial, or undefined when there is none: over a
 * relayed connection the IP in the address is the relay's, and the peer is not dialable.
 */
function ipOf(address: Multiaddr): string | undefined {
  const components = address.getComponents();
  if (components.some((c) => c.name === "p2p-circuit")) return undefined;
  return components.find((c) => c.name === "ip4" || c.name === "ip6")?.value;
}

function checkPositive(what: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${what} must be a positive integer, found ${value}`);
  }
}
