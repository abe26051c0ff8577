-- The test chart's scale-from-zero filter, written to the interface of SuperSONIC's cfg/envoy-filter.lua of the
-- inferenceServer generation (read at 098d4a6c): the chart fills in the two placeholders below; on a gRPC
-- RepositoryIndex it wakes the inference server through the admission sidecar, waits for a healthy host of the
-- inference cluster in Envoy's own stats (pacing itself with the sidecar's /sleep), and renews the wake once the
-- host is there. A request it did not accept still goes on to the router; its answer becomes UNAVAILABLE (14)
-- with Envoy's own message or, without one, the reason recorded here.

local ENABLED = ("SCALE_FROM_ZERO_ENABLED" == "true")
local WAIT_SECONDS = tonumber("READY_TIMEOUT_SECONDS") or 300
local INDEX = "/inference.GRPCInferenceService/RepositoryIndex"
local ADMISSION = "inference_server_admission"
local HEALTHY = "cluster%.inference_server_grpc_service%.membership_healthy: (%d+)"
local HEALTHY_STAT = "/stats?filter=cluster.inference_server_grpc_service.membership_healthy"

local function call(handle, cluster, path, timeout_ms)
  local headers, body = handle:httpCall(
    cluster, {[":method"] = "GET", [":path"] = path, [":authority"] = cluster}, "", timeout_ms)
  return headers ~= nil and headers[":status"] == "200", body
end

local function note(handle, key, value)
  handle:streamInfo():dynamicMetadata():set("envoy.lua", key, value)
end

local function healthy_hosts(handle)
  local _, body = call(handle, "envoy_admin", HEALTHY_STAT, 1000)
  return tonumber(string.match(body or "", HEALTHY) or "0") or 0
end

-- Until the deadline, or until the sidecar's /sleep has failed five times running (no spinning on the admin port).
local function wait_for_host(handle)
  local deadline = os.time() + WAIT_SECONDS
  local failures = 0
  while os.time() < deadline do
    if healthy_hosts(handle) > 0 then
      return true
    end
    if call(handle, ADMISSION, "/sleep", 2000) then
      failures = 0
    else
      failures = failures + 1
      if failures >= 5 then
        return false
      end
    end
  end
  return false
end

function envoy_on_request(handle)
  local headers = handle:headers()
  if headers:get(":path") ~= INDEX or headers:get("content-type") ~= "application/grpc" then
    return
  end
  note(handle, "accept_request", false)
  if ENABLED then
    if not call(handle, ADMISSION, "/wake", 30000) then
      note(handle, "reject_reason", "no healthy upstream: scale-from-zero wake failed")
      return
    end
    if not wait_for_host(handle) then
      note(handle, "reject_reason", "no healthy upstream: inference server did not become ready in time")
      return
    end
    -- The hold counted from the first wake; renewed now that the index is about to be answered.
    call(handle, ADMISSION, "/wake", 10000)
  end
  note(handle, "accept_request", true)
end

function envoy_on_response(handle)
  local noted = handle:streamInfo():dynamicMetadata():get("envoy.lua")
  if noted == nil then
    return
  end
  local message = handle:headers():get("grpc-message") or ""
  if noted["accept_request"] and not string.find(message, "no healthy upstream", 1, true) then
    return
  end
  if message == "" then
    message = noted["reject_reason"] or "request rejected"
  end
  local body = handle:body()
  if body then
    body:setBytes("")
  end
  handle:headers():replace("grpc-status", "14")
  handle:headers():replace("grpc-message", message)
end
