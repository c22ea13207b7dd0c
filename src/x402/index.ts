export { LocalNetworkError } from './errors';
export { anvilBinary, startAnvil, type AnvilOptions, type AnvilProcess } from './anvil';
export { createLocalFacilitator, type LocalFacilitator } from './local-facilitator';
export {
  LOCAL_CHAIN_ID,
  LOCAL_NETWORK,
  MULTICALL3_ADDRESS,
  startLocalX402Network,
  type LocalToken,
  type LocalWallet,
  type LocalX402Network,
  type LocalX402NetworkOptions,
} from './local-network';
