// SPDX-License-Identifier: MIT
// The one Multicall3 function the x402 `exact` EVM facilitator calls: when a simulated transferWithAuthorization
// fails, it reads balanceOf, name, version and authorizationState through `tryAggregate` at Multicall3's canonical
// address (0xcA11bde05977b3631167028862bE2a173976CA11, present on the chains x402 pays on) to say why: "nonce already
// used", "insufficient balance". A fresh local chain has nothing there, so the local network places this contract's
// runtime code at that address; without it every such failure would be reported as a bare "simulation failed".
// Same selector and ABI as Multicall3's tryAggregate(bool,(address,bytes)[]); only that function.
pragma solidity ^0.8.24;

contract TryAggregate {
    struct Call {
        address target;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function tryAggregate(bool requireSuccess, Call[] calldata calls) external payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            require(success || !requireSuccess, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
    }
}
