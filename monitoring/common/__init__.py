"""What every slice of the monitoring app shares: the API's page envelope (`pagination`), its
input and output shapes (`serializers`) and read queries (`queries`), the metric registry endpoint
(`api`), and the evaluation commands' file helpers (`cli`).
"""
