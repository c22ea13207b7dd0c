import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { EIP3009_TOKEN } from '../../src/x402/contracts/artifacts';
import { startLocalX402Network, type LocalX402Network } from '../../src/x402';
import { viem, viemAccounts, type Hex } from '../../src/x402/viem';

// The token contract on its own: the shipped bytecode is what its source compiles to, and the EIP-3009 functions
// the x402 facilitator does not call (receiveWithAuthorization, cancelAuthorization) behave as USDC's do.

const root = path.join(__dirname, '..', '..');

test('src/x402/contracts/artifacts.ts is exactly what scripts/compile-x402-contracts.mjs compiles from the .sol sources', () => {
  const run = spawnSync(process.execPath, ['scripts/compile-x402-contracts.mjs', '--check'], { cwd: root, encoding: 'utf8' });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
});

describe('on the local chain', () => {
  let net: LocalX402Network;
  beforeAll(async () => {
    net = await startLocalX402Network();
  });
  afterAll(async () => {
    await net?.stop();
  });

  function clients() {
    const chain = viem.defineChain({
      id: net.chainId,
      name: 'local',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [net.rpcUrl] } },
    });
    const transport = viem.http(net.rpcUrl);
    return {
      chain,
      transport,
      publicClient: viem.createPublicClient({ chain, transport, pollingInterval: 100 }),
      testClient: viem.createTestClient({ chain, transport, mode: 'anvil' }),
    };
  }

  const domain = () => ({ name: net.token.name, version: net.token.version, chainId: net.chainId, verifyingContract: net.token.address });
  const window = () => {
    const now = BigInt(Math.floor(Date.now() / 1000));
    return { validAfter: now - 600n, validBefore: now + 600n };
  };
  const nonce = (): Hex => viem.toHex(crypto.getRandomValues(new Uint8Array(32)));

  test('receiveWithAuthorization: only the payee may submit it, once', async () => {
    const { chain, transport, publicClient, testClient } = clients();
    const payer = await net.newWallet(500n);
    const payee = await net.newWallet();
    await testClient.setBalance({ address: payee.address, value: 10n ** 18n });
    const message = { from: payer.address, to: payee.address, value: 200n, ...window(), nonce: nonce() };
    const signature = await payer.account.signTypedData({
      domain: domain(),
      types: {
        ReceiveWithAuthorization: [
          { name: 'from', type: 'address' },
          { name: 'to', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'validAfter', type: 'uint256' },
          { name: 'validBefore', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'ReceiveWithAuthorization',
      message,
    });
    const args = [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, signature] as const;
    const call = { address: net.token.address, abi: EIP3009_TOKEN.abi, functionName: 'receiveWithAuthorization', args } as const;

    // Anyone but the payee is refused.
    await expect(publicClient.simulateContract({ ...call, account: payer.address })).rejects.toThrow(/caller must be the payee/);

    const payeeClient = viem.createWalletClient({ account: payee.account, chain, transport });
    const hash = await payeeClient.writeContract(call);
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe('success');
    expect(await net.balanceOf(payer.address)).toBe(300n);
    expect(await net.balanceOf(payee.address)).toBe(200n);
    expect(await net.authorizationState(payer.address, message.nonce)).toBe(true);

    await expect(publicClient.simulateContract({ ...call, account: payee.address })).rejects.toThrow(/authorization is used or canceled/);
  });

  test('cancelAuthorization: a canceled nonce can no longer move tokens', async () => {
    const { publicClient, testClient, chain, transport } = clients();
    const payer = await net.newWallet(500n);
    const payee = viemAccounts.privateKeyToAccount(viemAccounts.generatePrivateKey());
    const submitter = await net.newWallet();
    await testClient.setBalance({ address: submitter.address, value: 10n ** 18n });
    const authNonce = nonce();
    const cancelSignature = await payer.account.signTypedData({
      domain: domain(),
      types: {
        CancelAuthorization: [
          { name: 'authorizer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'CancelAuthorization',
      message: { authorizer: payer.address, nonce: authNonce },
    });
    const submitterClient = viem.createWalletClient({ account: submitter.account, chain, transport });
    const hash = await submitterClient.writeContract({
      address: net.token.address,
      abi: EIP3009_TOKEN.abi,
      functionName: 'cancelAuthorization',
      args: [payer.address, authNonce, cancelSignature],
    });
    expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe('success');
    expect(await net.authorizationState(payer.address, authNonce)).toBe(true);

    const message = { from: payer.address, to: payee.address, value: 100n, ...window(), nonce: authNonce };
    const signature = await payer.account.signTypedData({
      domain: domain(),
      types: {
        TransferWithAuthorization: [
          { name: 'from', type: 'address' },
          { name: 'to', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'validAfter', type: 'uint256' },
          { name: 'validBefore', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'TransferWithAuthorization',
      message,
    });
    await expect(
      publicClient.simulateContract({
        address: net.token.address,
        abi: EIP3009_TOKEN.abi,
        functionName: 'transferWithAuthorization',
        args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, signature],
        account: submitter.address,
      }),
    ).rejects.toThrow(/authorization is used or canceled/);
    expect(await net.balanceOf(payer.address)).toBe(500n);
  });

  test('a signature by anyone but the payer is refused; only the minter mints', async () => {
    const { publicClient } = clients();
    const payer = await net.newWallet(500n);
    const forger = await net.newWallet();
    const message = { from: payer.address, to: forger.address, value: 100n, ...window(), nonce: nonce() };
    const signature = await forger.account.signTypedData({
      domain: domain(),
      types: {
        TransferWithAuthorization: [
          { name: 'from', type: 'address' },
          { name: 'to', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'validAfter', type: 'uint256' },
          { name: 'validBefore', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'TransferWithAuthorization',
      message,
    });
    await expect(
      publicClient.simulateContract({
        address: net.token.address,
        abi: EIP3009_TOKEN.abi,
        functionName: 'transferWithAuthorization',
        args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, signature],
        account: forger.address,
      }),
    ).rejects.toThrow(/invalid signature/);
    await expect(
      publicClient.simulateContract({
        address: net.token.address,
        abi: EIP3009_TOKEN.abi,
        functionName: 'mint',
        args: [forger.address, 1n],
        account: forger.address,
      }),
    ).rejects.toThrow(/caller is not the minter/);
  });
});
