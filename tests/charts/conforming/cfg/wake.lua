-- Fixture: stands for the chart's scale-from-zero filter; only its presence is checked.
function envoy_on_request(handle)
end
