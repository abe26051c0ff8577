-- Fixture: stands for the chart's scale-from-zero filter. The check reads which Envoy clusters it calls.
function envoy_on_request(handle)
  local headers = {[":method"] = "GET", [":path"] = "/wake", [":authority"] = "admission"}
  handle:httpCall("triton_admission", headers, "", 30000)
  local stats = {
    [":method"] = "GET",
    [":path"] = "/stats?filter=cluster.triton_grpc_service.membership_healthy",
    [":authority"] = "admin",
  }
  handle:httpCall("envoy_admin", stats, "", 1000)
end
