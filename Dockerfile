# One image for web, worker and beat.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
# torch==2.13.0 from the default index is the CUDA build. For a CPU-only image, pass the index that serves
# the CPU wheels: docker compose build --build-arg PIP_EXTRA_INDEX_URL=<that index>
ARG PIP_EXTRA_INDEX_URL=""

WORKDIR /app
RUN useradd --create-home --uid 1000 evalplatform
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
# SECRET_KEY here only lets collectstatic import the settings; the running containers get their own.
RUN DEBUG=false SECRET_KEY=collectstatic-build-step-only python manage.py collectstatic --noinput \
    && mkdir -p /app/var/media && chown -R evalplatform /app/var
USER evalplatform
EXPOSE 8000
CMD ["gunicorn", "evalplatform.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
