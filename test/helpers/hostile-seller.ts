import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import { x402ResourceServer } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import type { LocalWallet, LocalX402Network } from '../../src/x402';

/**
 * A seller that misbehaves on purpose, built from the official x402 server pieces (the resource server, the exact EVM
 * scheme, the facilitator of the local network), so that what it signs, verifies and settles is real x402 on a real
 * chain: only its manners are hostile. Each path is one behaviour; the first request (no PAYMENT-SIGNATURE) gets the
 * path's 402, the paid one what the path says.
 */
export const HOSTILE_BEHAVIOURS = {
  '/honest': 'verify, settle, answer 200 with the settlement response',
  '/late-500': 'answer 500 at once, settle the authorization a few seconds later',
  '/fake-receipt': 'answer 200 with a success PAYMENT-RESPONSE whose transaction does not exist; never settle',
  '/silent': 'answer 200 with the content and no settlement response; never settle',
  '/permit2': 'ask, in the 402, for a transfer method Forge cannot sign (extra.assetTransferMethod "permit2")',
  '/huge-402': 'answer the unpaid request 402 with the terms in the header and an endless body',
  '/huge-200': 'settle, then answer 200 with an endless body',
  '/changing-terms': 'answer the paid request with a new 402 at twice the price; never settle',
  '/settle-then-402': 'settle, then answer 402 as if nothing was paid',
  '/redirect': 'answer the paid request 302 to /honest; never settle',
  '/other-chain': 'ask for payment on another chain (eip155:1) than the one Forge is configured for',
} as const;
export type HostilePath = keyof typeof HOSTILE_BEHAVIOURS;

export interface HostileSeller {
  url(path: HostilePath): string;
  /** The seller's wallet: what it was paid shows in its balance. */
  payee: LocalWallet;
  price: bigint;
  /** Every PAYMENT-SIGNATURE received, by path. */
  received: Map<HostilePath, string[]>;
  /** Bytes of endless bodies written before the client hung up, by path. */
  bodyBytesWritten: Map<HostilePath, number>;
  /** Late settlements in flight (await before reading the chain). */
  lateSettlements: Promise<unknown>[];
  /** Every settlement result of the facilitator, by path. */
  settlements: Map<HostilePath, { success: boolean; transaction?: string; errorReason?: string }[]>;
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(1024 * 1024, 'x');

export async function startHostileSeller(
  net: LocalX402Network,
  options: { price: bigint; lateSettleMs?: number; maxTimeoutSeconds?: number; payee?: LocalWallet },
): Promise<HostileSeller> {
  const payee = options.payee ?? (await net.newWallet());
  const resourceServer = new x402ResourceServer(net.facilitatorClient).register(net.network, new ExactEvmServerScheme());
  await resourceServer.initialize();
  const termsAt = async (price: bigint, extra: Record<string, unknown> = {}): Promise<PaymentRequirements> => {
    const [requirements] = await resourceServer.buildPaymentRequirements({
      scheme: 'exact',
      network: net.network,
      payTo: payee.address,
      price: net.price(price),
      maxTimeoutSeconds: options.maxTimeoutSeconds ?? 300,
      extra,
    });
    return requirements;
  };
  const honestTerms = await termsAt(options.price);
  const received = new Map<HostilePath, string[]>();
  const bodyBytesWritten = new Map<HostilePath, number>();
  const settlements = new Map<HostilePath, { success: boolean; transaction?: string; errorReason?: string }[]>();
  const lateSettlements: Promise<unknown>[] = [];
  let base = '';

  const ask = async (res: ServerResponse, path: HostilePath, requirements: PaymentRequirements, body?: 'endless'): Promise<void> => {
    const required = await resourceServer.createPaymentRequiredResponse([requirements], {
      url: `${base}${path}`,
      description: HOSTILE_BEHAVIOURS[path],
      mimeType: 'application/json',
    });
    res.setHeader('PAYMENT-REQUIRED', encodePaymentRequiredHeader(required));
    res.setHeader('content-type', 'application/json');
    res.statusCode = 402;
    if (body === 'endless') return endless(res, path);
    res.end(JSON.stringify(required));
  };
  const endless = (res: ServerResponse, path: HostilePath): void => {
    let written = 0;
    const more = (): void => {
      while (!res.destroyed && written < 1024 * CHUNK.length) {
        written += CHUNK.length;
        bodyBytesWritten.set(path, written);
        if (!res.write(CHUNK)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  };
  const settle = async (path: HostilePath, payload: PaymentPayload, requirements: PaymentRequirements) => {
    const verified = await resourceServer.verifyPayment(payload, requirements);
    if (!verified.isValid) return { success: false, errorReason: verified.invalidReason ?? 'invalid' };
    const settled = await resourceServer.settlePayment(payload, requirements);
    const list = settlements.get(path) ?? [];
    list.push({ success: settled.success, transaction: settled.transaction, errorReason: settled.errorReason });
    settlements.set(path, list);
    return settled;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://seller').pathname as HostilePath;
    if (!(path in HOSTILE_BEHAVIOURS)) {
      res.statusCode = 404;
      return void res.end('{}');
    }
    const signature = req.headers['payment-signature'];
    if (typeof signature !== 'string') {
      if (path === '/permit2') return ask(res, path, await termsAt(options.price, { assetTransferMethod: 'permit2' }));
      if (path === '/other-chain') return ask(res, path, { ...honestTerms, network: 'eip155:1' });
      return ask(res, path, honestTerms, path === '/huge-402' ? 'endless' : undefined);
    }
    received.set(path, [...(received.get(path) ?? []), signature]);
    const payload = decodePaymentSignatureHeader(signature);
    switch (path) {
      case '/late-500':
        res.statusCode = 500;
        res.end('{"error":"try again later"}');
        lateSettlements.push(
          new Promise((r) => setTimeout(r, options.lateSettleMs ?? 4000)).then(() => settle(path, payload, honestTerms)).catch(() => undefined),
        );
        return;
      case '/fake-receipt': {
        const fake = {
          success: true,
          transaction: `0x${'ab'.repeat(32)}`,
          network: net.network,
          payer: (payload.payload as { authorization: { from: string } }).authorization.from,
        };
        res.setHeader('PAYMENT-RESPONSE', encodePaymentResponseHeader(fake as never));
        res.setHeader('content-type', 'application/json');
        return void res.end('{"content":"not paid for"}');
      }
      case '/silent':
        res.setHeader('content-type', 'application/json');
        return void res.end('{"content":"free after all?"}');
      case '/changing-terms':
        return ask(res, path, await termsAt(options.price * 2n));
      case '/redirect':
        res.statusCode = 302;
        res.setHeader('location', `${base}/honest`);
        return void res.end();
      default:
        break;
    }
    const settled = await settle(path, payload, honestTerms);
    if (path === '/settle-then-402') return ask(res, path, honestTerms);
    res.setHeader('PAYMENT-RESPONSE', encodePaymentResponseHeader(settled as never));
    res.setHeader('content-type', 'application/json');
    if (!settled.success) {
      res.statusCode = 402;
      return void res.end('{}');
    }
    if (path === '/huge-200') return endless(res, path);
    res.end(JSON.stringify({ content: `paid for ${path}` }));
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent) res.statusCode = 599;
      res.end(JSON.stringify({ sellerError: err.message }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path) => `${base}${path}`,
    payee,
    price: options.price,
    received,
    bodyBytesWritten,
    lateSettlements,
    settlements,
    close: async () => {
      await Promise.allSettled(lateSettlements);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
