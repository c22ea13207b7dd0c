import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../contract/private-modes';
import type { Address, Hex } from './viem';

/*
 * What makes the dev network (FORGE_X402_DEV) the same network after a restart, in one private directory under
 * FORGE_HOME: anvil's own state file (the chain: balances, code, storage, blocks, written by anvil on exit and every
 * second), and a record of what Forge made on it and must find again (the keys of the token's minter and of the
 * facilitator's settler, the token's address, the wallets it keeps and which of them were funded on this chain). Keys
 * are in a 0600 file of a 0700 directory, as the rest of Forge's state.
 */

/** The directory of the dev network's state, under FORGE_HOME. */
export const DEV_NETWORK_DIR = 'x402-dev';
const CHAIN_FILE = 'chain-state.json';
const RECORD_FILE = 'network.json';
const LOCK_FILE = 'owner.json';

export const devNetworkDirOf = (home: string) => path.join(home, DEV_NETWORK_DIR);

/** What Forge made on the kept chain. */
export interface DevNetworkRecord {
  version: 1;
  chainId: number;
  /** The token's deployer and minter. */
  deployerKey: Hex;
  /** The account the facilitator settles from. */
  settlerKey: Hex;
  token: { address: Address; name: string; symbol: string; version: string; decimals: number };
  /** Wallets kept by name (the dev wallet is `wallet`). */
  wallets: Record<string, Hex>;
  /** Addresses already given their funds on this chain (lower case): funded once, not at every start. */
  funded: string[];
}

/** The files of one dev network directory. */
export class DevNetworkState {
  readonly dir: string;
  readonly chainFile: string;
  private readonly recordFile: string;
  private readonly lockFile: string;

  constructor(dir: string) {
    this.dir = dir;
    this.chainFile = path.join(dir, CHAIN_FILE);
    this.recordFile = path.join(dir, RECORD_FILE);
    this.lockFile = path.join(dir, LOCK_FILE);
  }

  /** Creates the directory, private. */
  ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  }

  /** The record, or undefined when there is none or it is not one (then the chain is made anew). */
  async readRecord(): Promise<DevNetworkRecord | undefined> {
    const text = await readFile(this.recordFile, 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    try {
      const record = JSON.parse(text) as DevNetworkRecord;
      const key = /^0x[0-9a-fA-F]{64}$/;
      if (record.version !== 1 || !key.test(record.deployerKey) || !key.test(record.settlerKey)) return undefined;
      if (!/^0x[0-9a-fA-F]{40}$/.test(record.token?.address ?? '')) return undefined;
      record.wallets = Object.fromEntries(Object.entries(record.wallets ?? {}).filter(([, k]) => key.test(k)));
      record.funded = Array.isArray(record.funded) ? record.funded.filter((a) => typeof a === 'string') : [];
      return record;
    } catch {
      return undefined;
    }
  }

  /** Replaces the record in one step (a complete temp file renamed over it): a crash leaves the old one or the new. */
  async writeRecord(record: DevNetworkRecord): Promise<void> {
    const temp = `${this.recordFile}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    try {
      await rename(temp, this.recordFile);
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    }
  }

  /** Moves an unreadable chain file aside (kept for a look, not loaded again); returns where it went. */
  async setChainAside(): Promise<string | undefined> {
    const aside = `${this.chainFile}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    try {
      await rename(this.chainFile, aside);
      return aside;
    } catch {
      return undefined;
    }
  }

  /**
   * Takes the directory for this process. Another live process holding it is said in the result (its chain is its
   * own: this process runs one that keeps nothing). A holder that died is taken over, after its anvil (which its death
   * told to save its state and exit: SIGTERM) has exited, or is stopped if it outlived it (no parent-death signal on
   * this host).
   */
  async acquire(): Promise<{ ok: true } | { ok: false; holder: number }> {
    this.ensureDir();
    const held = this.readLock();
    if (held && held.pid !== process.pid && alive(held.pid)) return { ok: false, holder: held.pid };
    if (held?.anvil !== undefined && isAnvilOf(held.anvil, this.chainFile)) await stopOrphan(held.anvil, this.chainFile);
    await this.writeLock({ pid: process.pid });
    return { ok: true };
  }

  /** Notes the anvil this process runs on the chain, so that a successor can wait for it. */
  async noteAnvil(anvilPid: number): Promise<void> {
    await this.writeLock({ pid: process.pid, anvil: anvilPid });
  }

  /** Gives the directory up (at a clean stop). */
  async release(): Promise<void> {
    if (this.readLock()?.pid === process.pid) await unlink(this.lockFile).catch(() => undefined);
  }

  private readLock(): { pid: number; anvil?: number } | undefined {
    try {
      const lock = JSON.parse(readFileSync(this.lockFile, 'utf8')) as { pid?: unknown; anvil?: unknown };
      if (typeof lock.pid !== 'number') return undefined;
      return { pid: lock.pid, ...(typeof lock.anvil === 'number' ? { anvil: lock.anvil } : {}) };
    } catch {
      return undefined;
    }
  }

  private async writeLock(lock: { pid: number; anvil?: number }): Promise<void> {
    const temp = `${this.lockFile}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(temp, JSON.stringify(lock), { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    await rename(temp, this.lockFile);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether `pid` is an anvil on this chain file (not some other process that took a dead one's pid). */
function isAnvilOf(pid: number, chainFile: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(chainFile);
  } catch {
    return false;
  }
}

/** Waits for a dead holder's anvil to finish writing the chain and exit; SIGTERM first if nothing told it to. */
async function stopOrphan(pid: number, chainFile: string): Promise<void> {
  const exited = async (ms: number) => {
    for (const deadline = Date.now() + ms; Date.now() < deadline;) {
      if (!isAnvilOf(pid, chainFile)) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return !isAnvilOf(pid, chainFile);
  };
  if (await exited(2_000)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  if (await exited(10_000)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
  await exited(2_000);
}
