import { x402Facilitator } from '@x402/core/facilitator';
import type { FacilitatorClient } from '@x402/core/server';
import type { Network, SupportedResponse } from '@x402/core/types';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { viem, type Account, type Chain, type Transport, type WalletClient } from './viem';

/** A facilitator in this process: the official one, and the same object behind the interface a resource server takes. */
export interface LocalFacilitator {
  /** `x402Facilitator` from @x402/core with the `exact` EVM scheme registered for one network. */
  facilitator: x402Facilitator;
  /** What `new x402ResourceServer(client)` takes: verify and settle go straight to `facilitator`, no HTTP between. */
  client: FacilitatorClient;
  /** The account that submits settlements (pays the gas). */
  address: `0x${string}`;
}

/**
 * Builds the official facilitator (`x402Facilitator` with @x402/evm's `exact` facilitator scheme) settling with the
 * given wallet on one network: verification reads and simulates on the chain, settlement sends
 * transferWithAuthorization from this wallet and waits for the receipt. Wiring as in the x402 examples'
 * facilitator (a wallet client extended with public actions, adapted by `toFacilitatorEvmSigner`).
 */
export function createLocalFacilitator(wallet: WalletClient<Transport, Chain, Account>, network: Network): LocalFacilitator {
  const client = wallet.extend(viem.publicActions);
  // The signer interface takes untyped ABIs and typed-data records; viem's own functions type them precisely,
  // hence the casts at this boundary (as in the x402 examples).
  const signer = toFacilitatorEvmSigner(
    {
      address: wallet.account.address,
      getCode: (args) => client.getCode(args),
      readContract: (args) => client.readContract({ ...args, args: args.args ?? [] } as never),
      verifyTypedData: (args) => client.verifyTypedData(args as never),
      writeContract: (args) => client.writeContract({ ...args, args: args.args ?? [] } as never),
      sendTransaction: (args) => client.sendTransaction(args as never),
      waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
    },
    // A local chain mines each transaction as it arrives; a receipt later than this means the node is gone.
    { confirmationTimeoutMs: 30_000 },
  );
  const facilitator = new x402Facilitator().register(network, new ExactEvmScheme(signer));
  return {
    facilitator,
    address: wallet.account.address,
    client: {
      verify: (payload, requirements) => facilitator.verify(payload, requirements),
      settle: (payload, requirements) => facilitator.settle(payload, requirements),
      // The resource server's interface is asynchronous (a hosted facilitator answers over HTTP); the facilitator
      // types its kinds' network as a plain string where the interface wants the `namespace:reference` form, which
      // every registered network has.
      getSupported: () => Promise.resolve(facilitator.getSupported() as SupportedResponse),
    },
  };
}
