export { LOCAL_CHAIN_ID, startLocalX402Network, type LocalWallet, type LocalX402Network } from './local-network';
