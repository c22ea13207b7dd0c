import { x402Client } from '@x402/core/client';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client';
import type { LocalWallet, LocalX402Network } from '../../src/x402/local-network';
import type { Hex } from '../../src/x402/viem';

/**
 * A buyer on the local x402 network: x402's own client with the `exact` EVM scheme over `wallet`. Its spend controls
 * allow only assets x402 knows (USDC and the like) unless told, so the local token is allowed here, capped at
 * `maxAmount` per payment.
 */
export function localBuyerClient(net: Pick<LocalX402Network, 'network' | 'token'>, wallet: LocalWallet, maxAmount: bigint): x402Client {
  return new x402Client()
    .register(net.network, new ExactEvmClientScheme(wallet.account))
    .setSpendControls({ allowedAssets: [{ network: net.network, asset: net.token.address, maxAmountPerPayment: maxAmount.toString() }] });
}

/** A payment signed for `terms` as @x402/fetch makes one, not yet sent: its PAYMENT-SIGNATURE header and its nonce. */
export async function signedPayment(client: x402Client, terms: PaymentRequired): Promise<{ header: string; nonce: Hex }> {
  const payload = await client.createPaymentPayload(terms);
  return { header: encodePaymentSignatureHeader(payload), nonce: (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce };
}
