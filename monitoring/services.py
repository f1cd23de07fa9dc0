"""Write-side operations of the monitoring app."""
